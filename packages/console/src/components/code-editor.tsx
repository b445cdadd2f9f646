import { javascript } from "@codemirror/lang-javascript";
import { lintGutter, setDiagnostics, type Diagnostic } from "@codemirror/lint";
import { Compartment } from "@codemirror/state";
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
  /** The editor's accessible name (ids do not reach into its shadow root, so no aria-labelledby). */
  readonly label: string;
  /** Read out with the name: where the server found problems, if it did. */
  readonly description?: string;
}

function offsetOf(view: EditorView, mark: CodeMark): number {
  const doc = view.state.doc;
  const line = doc.line(Math.min(Math.max(mark.line, 1), doc.lines));
  return Math.min(line.from + Math.max((mark.column ?? 1) - 1, 0), line.to);
}

/** Sizing inside the shadow root, which the console's stylesheet does not reach. */
const SIZE = EditorView.theme({
  "&": { minHeight: "12rem", fontSize: "0.9rem" },
  ".cm-scroller": { minHeight: "12rem" },
});

/**
 * CodeMirror 6, loaded with the reactor editor page only. It runs in a shadow root: there CodeMirror puts its
 * styles into constructed stylesheets (CSSOM), which the console's CSP (style-src 'self', no 'unsafe-inline')
 * allows, where in the document itself it would add <style> elements that the policy blocks. Tab is left to focus
 * navigation (no indentWithTab), so keyboard users can leave the editor.
 */
const CodeEditor = forwardRef<CodeEditorHandle, Props>(function CodeEditor(
  { value, onChange, marks, label, description },
  handle,
) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  // The accessible name and description change with the server's findings; a compartment swaps them in place.
  const attributes = useRef(new Compartment()).current;
  const change = useRef(onChange);
  change.current = onChange;

  useEffect(() => {
    if (host.current === null) return;
    const shadow = host.current.shadowRoot ?? host.current.attachShadow({ mode: "open" });
    const editor = new EditorView({
      doc: value,
      parent: shadow,
      root: shadow,
      extensions: [
        basicSetup,
        javascript(),
        lintGutter(),
        SIZE,
        // Wrapped, not scrolled sideways: readable on a phone, and no scrolling box the keyboard cannot reach.
        EditorView.lineWrapping,
        attributes.of(EditorView.contentAttributes.of({ "aria-label": label })),
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
    view.current?.dispatch({
      effects: attributes.reconfigure(
        EditorView.contentAttributes.of({
          "aria-label": label,
          ...(description !== undefined && { "aria-description": description }),
        }),
      ),
    });
  }, [label, description]);

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
