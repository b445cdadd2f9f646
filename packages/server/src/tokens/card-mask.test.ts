import { describe, expect, it } from "vitest";
import {
  CHECK_BUDGET_MS,
  checkBudget,
  createCardExposureCheck,
  type CardType,
  type CheckBudget,
} from "./card-mask.js";
import {
  ExpressionError,
  TOOK_TOO_LONG,
  createExpressionEngine,
  type ExpressionEngine,
} from "./expressions.js";

const engine = createExpressionEngine();
const ample: CheckBudget = { exceeded: () => false };
const spent: CheckBudget = { exceeded: () => true };

/**
 * A fresh check each time (no verdict kept), several times over: a verdict drawn from random cards must not
 * depend on the draw.
 */
function verdicts(type: CardType, template: string, runs = 3): boolean[] {
  return Array.from({ length: runs }, () => createCardExposureCheck(engine).exposes(type, template, ample));
}

describe("the check's budget", () => {
  it("counts CPU time, not time spent waiting", async () => {
    const budget = checkBudget(50);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(budget.exceeded()).toBe(false);
    const busy = process.cpuUsage();
    while (process.cpuUsage(busy).user < 60_000) Math.sqrt(Math.random());
    expect(budget.exceeded()).toBe(true);
  });
});

describe("what a card mask may show (PCI DSS 3.4.1)", () => {
  it.each([
    "{{ data | reveal_last: 4 }}",
    "{{ data | last4 }}",
    "{{ data | reveal: 8, 4 }}",
    "{{ data | reveal: 6, 4, '*' }}",
    "{{ data | card_mask: 'true', 'true' }}",
    "{{ data | card_mask: true, false, '#' }}",
    "{{ data | card_bin }}",
    "{{ data | card_bin }}…{{ data | last4 }}",
    "{{ data | slice: 0, 8 }}",
    "{{ data | size }} digits ending {{ data | last4 }}",
    "{{ data | alias_card: true, true }}",
    "{{ data | alias_preserve_format: 8, 4 }}",
    "{{ data | alias_preserve_length: 6, 4 }}",
    "XXXX-XXXX-XXXX-XXXX",
    "{{ data.number }}",
  ])("card_number: %s shows at most the first 8 and last 4 digits", (template) => {
    expect(verdicts("card_number", template)).toEqual([false, false, false]);
  });

  it.each([
    "{{ data }}",
    "{{ data | stringify }}",
    "x{{ data }}",
    "{{ data | reveal: 9, 4 }}",
    "{{ data | reveal: 8, 5 }}",
    "{{ data | reveal_last: 5 }}",
    "{{ data | slice: 8, 1 }}",
    "{{ data | slice: -5, 1 }}",
    "{{ data | split: '' | reverse | join: '' }}",
    "{{ data | remove: '7' | size }}",
    "{{ data | to_number | modulo: 100000 }}",
    "{{ data | card_mask: 'false', 'true', 'X', '0123' }}",
    "{{ data | alias_preserve_format: 9, 4 }}",
    "{{ data | replace: '0', 'a' | replace: '1', 'b' }}",
    "{{ data | slice: 8, 4 | to_number | plus: 1 }}",
  ])("card_number: %s shows more, and is refused", (template) => {
    expect(verdicts("card_number", template)).toEqual([true, true, true]);
  });

  it.each([
    "{{ data.number | reveal_last: 4 }}",
    "{{ data.number | card_mask: 'true', 'true' }}",
    "{{ data.expiration_month }}/{{ data.expiration_year }}",
    "{{ data | card_exp: 'MM/YY' }}",
    "{{ data.number | card_bin }} {{ data.expiration_year }}",
    "{{ data.cvc | size }}",
  ])("card: %s shows at most the first 8 and last 4 digits, and no CVC", (template) => {
    expect(verdicts("card", template)).toEqual([false, false, false]);
  });

  it.each([
    "{{ data }}",
    "{{ data.number }}",
    "{{ data.cvc }}",
    "{{ data.cvc | slice: 0, 1 }}",
    "{{ data.number | append: data.cvc | reveal_last: 4 }}",
    "{{ data.number | reveal: 0, 6 }}",
  ])("card: %s shows more, and is refused", (template) => {
    expect(verdicts("card", template)).toEqual([true, true, true]);
  });

  it("keeps its verdicts, and stops when its budget is spent and it has none", () => {
    const check = createCardExposureCheck(engine);
    expect(check.exposes("card_number", "{{ data | last4 }}", ample)).toBe(false);
    expect(check.exposes("card_number", "{{ data | last4 }}", spent)).toBe(false);
    let error: unknown;
    try {
      check.exposes("card_number", "{{ data | slice: 0, 6 }}", spent);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ExpressionError);
    expect((error as Error).message).toBe(`could not be checked within ${CHECK_BUDGET_MS} ms; simplify it`);
  });

  it("retries an evaluation that hit the renderer's time limit, and gives up on one that keeps hitting it", () => {
    // The real engine, whose clock is late on every fifth evaluation, or always.
    const slowSometimes = (every: number): ExpressionEngine => {
      let calls = 0;
      return {
        check: (template) => engine.check(template),
        evaluate: (template, scope, options) => {
          calls += 1;
          if (calls % every === 0) throw new ExpressionError(TOOK_TOO_LONG);
          return engine.evaluate(template, scope, options);
        },
      };
    };
    expect(
      createCardExposureCheck(slowSometimes(5)).exposes("card_number", "{{ data | last4 }}", ample),
    ).toBe(false);
    expect(() =>
      createCardExposureCheck(slowSometimes(1)).exposes("card_number", "{{ data | last4 }}", ample),
    ).toThrow(TOOK_TOO_LONG);
  });
});
