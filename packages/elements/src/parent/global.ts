// The script served at /elements/v1/elements.js: `window.TesseraElements.init(...)`.
export { init, ElementsError } from "./index.js";
