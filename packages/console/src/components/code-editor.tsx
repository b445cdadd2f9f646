import { javascript } from "@codemirror/lang-javascript";
import { lintGutter, setDiagnostics, type Diagnostic } from "@codemirror/lint";
import { EditorView } from "@codemirror/view";
import { basicSetup } from "codemirror";
import { forwardRef, useEffect, useImperativeHandle, useRef } from "react";

/** Where the server says the code is wrong, as editors count (from 1). */
export interface CodeMark {
  readonly message: string;
  readonly line: number;
  readonly column?: number;
}

export interface CodeEditorHandle {
  /** Focuses the editor with the cursor at a mark. */
  jumpTo(mark: CodeMark): void;
}

interface Props {
  readonly value: string;
  readonly onChange: (value: string) => void;
  readonly marks: readonly CodeMark[];
  readonly labelledBy: string;
  readonly describedBy?: string;
}

function offsetOf(view: EditorView, mark: CodeMark): number {
  const doc = view.state.doc;
  const line = doc.line(Math.min(Math.max(mark.line, 1), doc.lines));
  return Math.min(line.from + Math.max((mark.column ?? 1) - 1, 0), line.to);
}

/**
 * CodeMirror 6, loaded with the reactor editor page only. Its styles go into constructed stylesheets, which the
 * console's CSP (style-src 'self', no 'unsafe-inline') allows. Tab is left to focus navigation (no indentWithTab),
 * so keyboard users can leave the editor.
 */
const CodeEditor = forwardRef<CodeEditorHandle, Props>(function CodeEditor(
  { value, onChange, marks, labelledBy, describedBy },
  handle,
) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const change = useRef(onChange);
  change.current = onChange;

  useEffect(() => {
    if (host.current === null) return;
    const editor = new EditorView({
      doc: value,
      parent: host.current,
      extensions: [
        basicSetup,
        javascript(),
        lintGutter(),
        EditorView.contentAttributes.of({
          "aria-labelledby": labelledBy,
          ...(describedBy !== undefined && { "aria-describedby": describedBy }),
        }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) change.current(update.state.doc.toString());
        }),
      ],
    });
    view.current = editor;
    return () => {
      editor.destroy();
      view.current = null;
    };
    // Created once: the document is the editor's own after that, and `value` only seeds it.
  }, []);

  useEffect(() => {
    const editor = view.current;
    if (editor === null) return;
    const diagnostics: Diagnostic[] = marks.map((mark) => {
      const from = offsetOf(editor, mark);
      return {
        from,
        to: Math.min(from + 1, editor.state.doc.length),
        severity: "error",
        message: mark.message,
      };
    });
    editor.dispatch(setDiagnostics(editor.state, diagnostics));
  }, [marks]);

  useImperativeHandle(handle, () => ({
    jumpTo(mark) {
      const editor = view.current;
      if (editor === null) return;
      const at = offsetOf(editor, mark);
      editor.dispatch({ selection: { anchor: at }, scrollIntoView: true });
      editor.focus();
    },
  }));

  return <div ref={host} className="code-editor" data-testid="code-editor" />;
});

export default CodeEditor;
