import type * as Library from "../parent/global.js";
import type { ChangeEvent, TesseraElement } from "../parent/index.js";

/**
 * The demo checkout (`/elements/demo`): what a merchant page does, with the library loaded as a merchant loads
 * it, from `/elements/v1/elements.js`.
 */
declare const TesseraElements: typeof Library;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

function log(name: string, detail: unknown): void {
  const events = $("events");
  const line = `${new Date().toISOString().slice(11, 23)}  ${name}${detail === undefined ? "" : `  ${JSON.stringify(detail)}`}`;
  events.textContent = `${line}\n${events.textContent ?? ""}`.split("\n").slice(0, 40).join("\n");
}

/** Mirrors a field's state on the page's own box around its frame: focus ring, error border. */
function follow(
  element: TesseraElement,
  name: string,
  box: HTMLElement,
  states: Map<string, ChangeEvent>,
): void {
  element.on("ready", () => log(`${name} ready`, undefined));
  element.on("focus", () => box.classList.add("focused"));
  element.on("blur", () => {
    box.classList.remove("focused");
    const state = states.get(name);
    box.classList.toggle("invalid", state !== undefined && state.errors.length > 0);
  });
  element.on("change", (event) => {
    states.set(name, event);
    box.classList.toggle("invalid", !event.valid);
    log(`${name} change`, event);
  });
}

function start(key: string): void {
  const elements = TesseraElements.init({ baseUrl: new URL("..", location.href).href, key });
  const style = {
    base: { fontSize: "16px", color: "#1a1a1a", "::placeholder": { color: "#6b6b6b" } },
    invalid: { color: "#b91c1c" },
  };
  const number = elements.createElement("cardNumber", { label: "Card number", style });
  const expiry = elements.createElement("cardExpirationDate", { label: "Expiration date", style });
  const cvc = elements.createElement("cardVerificationCode", { label: "Security code", style });
  const states = new Map<string, ChangeEvent>();
  follow(number, "cardNumber", $("card-number"), states);
  follow(expiry, "cardExpirationDate", $("card-expiry"), states);
  follow(cvc, "cardVerificationCode", $("card-cvc"), states);
  number.on("change", (event) => {
    const brand = event.cardBrand ?? "unknown";
    $("brand").textContent = brand === "unknown" ? "" : `(${brand})`;
    cvc.update({ cardBrand: brand });
  });

  const problem = $("problem");
  const submit = async () => {
    problem.textContent = "";
    try {
      const token = await elements.tokenize({
        type: "card",
        data: { number, expiration_month: expiry.month(), expiration_year: expiry.year(), cvc },
      });
      $("token").textContent = JSON.stringify(token, null, 2);
      log("tokenized", undefined);
    } catch (error) {
      problem.textContent = error instanceof TesseraElements.ElementsError ? error.message : String(error);
    }
  };
  $("tokenize").addEventListener("click", () => void submit());
  for (const element of [number, expiry, cvc]) element.on("keydown", () => void submit());

  $("checkout").hidden = false;
  void Promise.all([
    number.mount("#card-number"),
    expiry.mount("#card-expiry"),
    cvc.mount("#card-cvc"),
  ]).catch((error: unknown) => {
    problem.textContent = error instanceof Error ? error.message : String(error);
  });
}

$("setup").addEventListener("submit", (event) => {
  event.preventDefault();
  const key = $<HTMLInputElement>("key").value.trim();
  if (key.length === 0) return;
  $("setup").hidden = true;
  start(key);
});
