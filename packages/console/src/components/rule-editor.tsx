import {
  closestCenter,
  DndContext,
  KeyboardSensor,
  PointerSensor,
  useSensor,
  useSensors,
  type DragEndEvent,
  type UniqueIdentifier,
} from "@dnd-kit/core";
import {
  arrayMove,
  SortableContext,
  sortableKeyboardCoordinates,
  useSortable,
  verticalListSortingStrategy,
} from "@dnd-kit/sortable";
import { CSS } from "@dnd-kit/utilities";
import type { AccessRule, Condition, TokenPermission, Transform } from "@tessera/sdk";
import { isTokenPermission, PERMISSION_DESCRIPTIONS, TRANSFORM_DESCRIPTIONS } from "../permissions";
import { Field } from "./ui";

export interface RuleDraft {
  /** Stable across reorders: the list's and the drag-and-drop's key. */
  readonly key: string;
  readonly description: string;
  readonly kind: "container" | "conditions";
  readonly container: string;
  readonly conditions: readonly Condition[];
  readonly transform: Transform;
  readonly permissions: readonly TokenPermission[];
}

let nextKey = 0;
const newKey = () => `rule-${++nextKey}`;

export function newRule(permissions: readonly TokenPermission[]): RuleDraft {
  return {
    key: newKey(),
    description: "",
    kind: "container",
    container: "/",
    conditions: [],
    transform: "mask",
    permissions: permissions.slice(0, 1),
  };
}

export function ruleDrafts(rules: readonly AccessRule[]): RuleDraft[] {
  return [...rules]
    .sort((a, b) => a.priority - b.priority)
    .map((rule) => ({
      key: newKey(),
      description: rule.description ?? "",
      kind: rule.conditions !== undefined ? "conditions" : "container",
      container: rule.container ?? "",
      conditions: rule.conditions ?? [],
      transform: rule.transform,
      permissions: rule.permissions.filter(isTokenPermission),
    }));
}

/** The rules as sent: priorities 1, 2, 3… in the order shown, which is the order they are tried in. */
export function rulesOf(drafts: readonly RuleDraft[]): AccessRule[] {
  return drafts.map((draft, i) => ({
    ...(draft.description.trim() !== "" && { description: draft.description.trim() }),
    priority: i + 1,
    ...(draft.kind === "container"
      ? { container: draft.container.trim() }
      : { conditions: draft.conditions.map((c) => ({ ...c })) }),
    transform: draft.transform,
    permissions: [...draft.permissions],
  }));
}

interface EditorProps {
  readonly rules: readonly RuleDraft[];
  readonly onChange: (rules: RuleDraft[]) => void;
  /** The token permissions the Application's type may hold. */
  readonly allowed: readonly TokenPermission[];
  /** The server's field errors (`rules[1].container`, …), for the rows they name. */
  readonly errors: Readonly<Record<string, string[]>>;
}

/**
 * Access rules in precedence order: drag a row by its handle (pointer, or Space then the arrow keys), or use the
 * Move up / Move down buttons.
 */
export function RuleEditor({ rules, onChange, allowed, errors }: EditorProps) {
  const sensors = useSensors(
    useSensor(PointerSensor),
    useSensor(KeyboardSensor, { coordinateGetter: sortableKeyboardCoordinates }),
  );
  const move = (from: number, to: number) => onChange(arrayMove([...rules], from, to));
  const update = (index: number, change: Partial<RuleDraft>) =>
    onChange(rules.map((rule, i) => (i === index ? { ...rule, ...change } : rule)));

  const position = (id: UniqueIdentifier) => rules.findIndex((r) => r.key === id) + 1;

  function dragEnd({ active, over }: DragEndEvent) {
    if (over === null || active.id === over.id) return;
    move(
      rules.findIndex((r) => r.key === active.id),
      rules.findIndex((r) => r.key === over.id),
    );
  }

  return (
    <fieldset className="rules">
      <legend>Access rules, first match wins</legend>
      <p className="hint">
        For each token, rules are tried from the top: the first that holds the permission and covers one of
        the token&apos;s containers decides, and its transform applies. Top-level permissions come after every
        rule.
      </p>
      {errors.rules !== undefined && <p className="field-error">{errors.rules.join("; ")}</p>}
      <DndContext
        sensors={sensors}
        collisionDetection={closestCenter}
        onDragEnd={dragEnd}
        accessibility={{
          screenReaderInstructions: {
            draggable:
              "To reorder a rule, press Space or Enter, move it with the arrow keys, and press Space or Enter again to drop it, or Escape to cancel.",
          },
          announcements: {
            onDragStart: ({ active }) => `Picked up rule ${position(active.id)}.`,
            onDragOver: ({ active, over }) =>
              over === null
                ? undefined
                : `Rule ${position(active.id)} is over position ${position(over.id)}.`,
            onDragEnd: ({ active, over }) =>
              over === null
                ? `Rule ${position(active.id)} was dropped where it was.`
                : `Rule ${position(active.id)} was dropped at position ${position(over.id)}.`,
            onDragCancel: ({ active }) => `Reordering cancelled; rule ${position(active.id)} stays.`,
          },
        }}
      >
        <SortableContext items={rules.map((r) => r.key)} strategy={verticalListSortingStrategy}>
          <ol className="rule-list">
            {rules.map((rule, index) => (
              <RuleRow
                key={rule.key}
                rule={rule}
                index={index}
                count={rules.length}
                allowed={allowed}
                errors={errors}
                onChange={(change) => update(index, change)}
                onMove={(to) => move(index, to)}
                onRemove={() => onChange(rules.filter((_, i) => i !== index))}
              />
            ))}
          </ol>
        </SortableContext>
      </DndContext>
      <button type="button" onClick={() => onChange([...rules, newRule(allowed)])}>
        Add a rule
      </button>
    </fieldset>
  );
}

function RuleRow({
  rule,
  index,
  count,
  allowed,
  errors,
  onChange,
  onMove,
  onRemove,
}: {
  rule: RuleDraft;
  index: number;
  count: number;
  allowed: readonly TokenPermission[];
  errors: Readonly<Record<string, string[]>>;
  onChange: (change: Partial<RuleDraft>) => void;
  onMove: (to: number) => void;
  onRemove: () => void;
}) {
  const { attributes, listeners, setNodeRef, setActivatorNodeRef, transform, transition, isDragging } =
    useSortable({ id: rule.key });
  const at = `rules[${index}]`;
  const errorsOf = (field: string) => errors[`${at}.${field}`];
  const number = index + 1;
  const conditionErrors = Object.entries(errors)
    .filter(([field]) => field.startsWith(`${at}.conditions`))
    .flatMap(([, messages]) => messages);
  return (
    <li
      ref={setNodeRef}
      className={isDragging ? "rule dragging" : "rule"}
      style={{ transform: CSS.Transform.toString(transform), transition }}
      aria-label={`Rule ${number}, priority ${number}`}
    >
      <div className="rule-head">
        <button
          type="button"
          className="handle"
          ref={setActivatorNodeRef}
          {...attributes}
          {...listeners}
          aria-label={`Drag rule ${number} to reorder`}
        >
          ⠿
        </button>
        <strong>Rule {number}</strong>
        <span className="hint">priority {number}</span>
        <span className="spacer" />
        <button
          type="button"
          disabled={index === 0}
          onClick={() => onMove(index - 1)}
          aria-label={`Move rule ${number} up`}
        >
          ↑ Up
        </button>
        <button
          type="button"
          disabled={index === count - 1}
          onClick={() => onMove(index + 1)}
          aria-label={`Move rule ${number} down`}
        >
          ↓ Down
        </button>
        <button type="button" className="danger" onClick={onRemove} aria-label={`Remove rule ${number}`}>
          Remove
        </button>
      </div>
      <div className="rule-body">
        <Field label={`Rule ${number} applies to`} errors={errorsOf("conditions") ?? undefined}>
          {(props) => (
            <select
              {...props}
              value={rule.kind}
              onChange={(event) => onChange({ kind: event.target.value as RuleDraft["kind"] })}
            >
              <option value="container">a container (and the containers below it)</option>
              <option value="conditions">conditions (session keys only)</option>
            </select>
          )}
        </Field>
        {rule.kind === "container" ? (
          <Field
            label={`Rule ${number} container`}
            hint="A path like /pci/high/: it covers itself and every container under it."
            errors={errorsOf("container")}
          >
            {(props) => (
              <input
                {...props}
                value={rule.container}
                spellCheck={false}
                onChange={(event) => onChange({ container: event.target.value })}
              />
            )}
          </Field>
        ) : (
          <ConditionRows
            number={number}
            conditions={rule.conditions}
            errors={[...conditionErrors, ...(errorsOf("container") ?? [])]}
            onChange={(conditions) => onChange({ conditions })}
          />
        )}
        <Field label={`Rule ${number} transform`} errors={errorsOf("transform")}>
          {(props) => (
            <select
              {...props}
              value={rule.transform}
              onChange={(event) => onChange({ transform: event.target.value as Transform })}
            >
              {(Object.keys(TRANSFORM_DESCRIPTIONS) as Transform[]).map((t) => (
                <option key={t} value={t}>
                  {TRANSFORM_DESCRIPTIONS[t]}
                </option>
              ))}
            </select>
          )}
        </Field>
        <fieldset className="permissions">
          <legend>Rule {number} permissions</legend>
          {allowed.map((permission) => (
            <label key={permission} className="check">
              <input
                type="checkbox"
                checked={rule.permissions.includes(permission)}
                onChange={(event) =>
                  onChange({
                    permissions: event.target.checked
                      ? [...rule.permissions, permission]
                      : rule.permissions.filter((p) => p !== permission),
                  })
                }
              />
              <span>
                <code>{permission}</code> <span className="hint">{PERMISSION_DESCRIPTIONS[permission]}</span>
              </span>
            </label>
          ))}
          {errorsOf("permissions") !== undefined && (
            <p className="field-error">{errorsOf("permissions")?.join("; ")}</p>
          )}
        </fieldset>
        <Field label={`Rule ${number} description`} errors={errorsOf("description")}>
          {(props) => (
            <input
              {...props}
              value={rule.description}
              onChange={(event) => onChange({ description: event.target.value })}
            />
          )}
        </Field>
      </div>
    </li>
  );
}

function ConditionRows({
  number,
  conditions,
  errors,
  onChange,
}: {
  number: number;
  conditions: readonly Condition[];
  errors: readonly string[];
  onChange: (conditions: Condition[]) => void;
}) {
  const set = (i: number, change: Partial<Condition>) =>
    onChange(conditions.map((c, j) => (j === i ? { ...c, ...change } : c)));
  return (
    <fieldset className="conditions">
      <legend>Rule {number} conditions</legend>
      <p className="hint">
        Conditions match a session key&apos;s tokens by id or container. Tessera does not issue session keys
        yet, and Applications&apos; own rules need a container: the server refuses conditions here for now.
      </p>
      {conditions.map((condition, i) => (
        <div className="row" key={i}>
          <select
            aria-label={`Condition ${i + 1} attribute`}
            value={condition.attribute}
            onChange={(event) => set(i, { attribute: event.target.value as Condition["attribute"] })}
          >
            <option value="container">container</option>
            <option value="id">id</option>
          </select>
          <select
            aria-label={`Condition ${i + 1} operator`}
            value={condition.operator}
            onChange={(event) => set(i, { operator: event.target.value as Condition["operator"] })}
          >
            <option value="starts_with">starts with</option>
            <option value="equals">equals</option>
          </select>
          <input
            aria-label={`Condition ${i + 1} value`}
            value={condition.value}
            onChange={(event) => set(i, { value: event.target.value })}
          />
          <button type="button" onClick={() => onChange(conditions.filter((_, j) => j !== i))}>
            Remove condition {i + 1}
          </button>
        </div>
      ))}
      <button
        type="button"
        onClick={() =>
          onChange([...conditions, { attribute: "container", operator: "starts_with", value: "/" }])
        }
      >
        Add a condition
      </button>
      {errors.length > 0 && <p className="field-error">{errors.join("; ")}</p>}
    </fieldset>
  );
}
