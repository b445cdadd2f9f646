import { randomInt } from "node:crypto";
import { ExpressionError, TOOK_TOO_LONG, type ExpressionEngine, type RandomInt } from "./expressions.js";
import { luhnValid } from "../shared/checksums.js";

/**
 * PCI DSS v4.0 requirement 3.4.1: where a card number (PAN) is displayed, at most its BIN and its last four
 * digits may show. Tessera allows the first 8 digits (the 8-digit BINs of ISO/IEC 7812-1:2017) and the last 4, for
 * numbers of every length. The card's CVC is sensitive authentication data and shows never (3.3.1).
 */
const PAN_SHOWN_FIRST = 8;
const PAN_SHOWN_LAST = 4;
/** The lengths a card_number may have (token-types.ts). */
const PAN_LENGTHS = [13, 14, 15, 16, 17, 18, 19] as const;
/** Random cards per length, and changed copies of each: 7 × 4 × (1 + 8) = 252 evaluations, a few milliseconds. */
const SAMPLES_PER_LENGTH = 4;
const VARIANTS_PER_SAMPLE = 8;
/**
 * The CPU time one request may spend checking (all the fields of a mask together, or an alias id). Typical
 * templates need a hundredth of it or less; a template built to be slow to evaluate must not hold the event loop
 * for long.
 */
export const CHECK_BUDGET_MS = 1_000;
/** An evaluation that hit the renderer's time limit is retried: on a busy host that is the clock, not the data. */
const ATTEMPTS = 5;
const VERDICTS_KEPT = 1_000;

export type CardType = "card" | "card_number";

export interface CheckBudget {
  exceeded(): boolean;
}

/**
 * Counts this process's CPU time, not the wall clock: on a busy host a check descheduled for a while must not be
 * refused for it, since the verdict would then depend on the load rather than the template.
 */
export function checkBudget(ms = CHECK_BUDGET_MS): CheckBudget {
  const start = process.cpuUsage();
  return {
    exceeded() {
      const { user, system } = process.cpuUsage(start);
      return user + system > ms * 1_000;
    },
  };
}

export function isCardType(type: string): type is CardType {
  return type === "card" || type === "card_number";
}

export function cardExposureProblem(type: CardType): string {
  const shown = `at most the first ${PAN_SHOWN_FIRST} and last ${PAN_SHOWN_LAST} digits of the card number`;
  return type === "card"
    ? `must show ${shown} and never the cvc (PCI DSS 3.4.1, 3.3.1)`
    : `must show ${shown} (PCI DSS 3.4.1)`;
}

/**
 * Whether a template shows what PCI DSS forbids when a token of `type` is displayed through it (as a mask, or
 * as an alias id). Judged by its behaviour, not its text, so that no spelling slips through: the template is
 * evaluated over random synthetic cards of every length, then over copies of each whose hidden digits (all but
 * the first 8 and last 4) and CVC are drawn anew. If any output changes, hidden digits show, in whatever form: as
 * they are, reordered, encoded, counted, or as an error that some digits cause and others do not. Real data is
 * never used, so the check tells nothing about any token, and its verdict holds whoever sets the template.
 *
 * It is a test, not a proof: a template crafted to show something only for rare numbers (a digit pattern the
 * samples happen to miss) can pass. The masks and aliases documented for cards are classified right
 * (card-mask.test.ts).
 */
export function createCardExposureCheck(engine: ExpressionEngine) {
  // The verdict depends on the template text and the type only; a custom mask is usually set on many tokens.
  const verdicts = new Map<string, boolean>();

  function outcome(template: string, data: unknown, budget: CheckBudget): string {
    if (budget.exceeded()) {
      throw new ExpressionError(`could not be checked within ${CHECK_BUDGET_MS} ms; simplify it`);
    }
    for (let attempt = 1; ; attempt++) {
      try {
        // A fixed sequence for the alias filters: their random characters must not make two outputs differ.
        return JSON.stringify(engine.evaluate(template, { data }, { random: FIXED_RANDOM })) ?? "undefined";
      } catch (error) {
        if (!(error instanceof ExpressionError)) throw error;
        if (error.message === TOOK_TOO_LONG) {
          if (attempt < ATTEMPTS) continue;
          throw error;
        }
        return `error: ${error.message}`;
      }
    }
  }

  function shows(type: CardType, template: string, budget: CheckBudget): boolean {
    const render = (pan: string, cvc: string) =>
      outcome(
        template,
        type === "card" ? { number: pan, expiration_month: 12, expiration_year: 2030, cvc } : pan,
        budget,
      );
    for (const length of PAN_LENGTHS) {
      for (let sample = 0; sample < SAMPLES_PER_LENGTH; sample++) {
        const pan = syntheticPan(length);
        const cvc = randomDigits(sample % 2 === 0 ? 3 : 4);
        const base = render(pan, cvc);
        for (let variant = 0; variant < VARIANTS_PER_SAMPLE; variant++) {
          const hidden = randomDigits(length - PAN_SHOWN_FIRST - PAN_SHOWN_LAST);
          const changed = pan.slice(0, PAN_SHOWN_FIRST) + hidden + pan.slice(length - PAN_SHOWN_LAST);
          if (render(changed, randomDigits(cvc.length)) !== base) return true;
        }
      }
    }
    return false;
  }

  return {
    /**
     * True when `template` shows more of a card than PCI DSS allows (see above). Past the budget, or when the
     * template keeps hitting the renderer's time limit, this throws an ExpressionError for the field.
     */
    exposes(type: CardType, template: string, budget: CheckBudget): boolean {
      const key = `${type}\n${template}`;
      let verdict = verdicts.get(key);
      if (verdict === undefined) {
        verdict = shows(type, template, budget);
        if (verdicts.size >= VERDICTS_KEPT) verdicts.delete(verdicts.keys().next().value as string);
        verdicts.set(key, verdict);
      }
      return verdict;
    },
  };
}

export type CardExposureCheck = ReturnType<typeof createCardExposureCheck>;

const FIXED_RANDOM: RandomInt = () => 0;

function randomDigits(count: number): string {
  return Array.from({ length: count }, () => String(randomInt(10))).join("");
}

/** Random digits with a Luhn check digit, as real card numbers have (masks may rely on neither). */
function syntheticPan(length: number): string {
  const body = randomDigits(length - 1);
  for (let check = 0; check < 10; check++) {
    if (luhnValid(body + String(check))) return body + String(check);
  }
  throw new Error("no Luhn check digit found");
}
