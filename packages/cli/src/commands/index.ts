import type { Command, Group } from "../args.js";
import { applications } from "./applications.js";
import { audit } from "./audit.js";
import { completionCommand } from "./completion.js";
import { keys } from "./keys.js";
import { reactors } from "./reactors.js";
import { init, migrate, serve } from "./server.js";
import { sessions } from "./sessions.js";
import { tenants } from "./tenants.js";
import { tokens } from "./tokens.js";
import { webhooks } from "./webhooks.js";

/** The commands that run the vault itself, with the server's environment. */
export const VAULT_COMMANDS: readonly (Command | Group)[] = [serve, init, migrate, keys, audit];

/** The commands that administer a running vault over its API. */
export const ADMIN_COMMANDS: readonly Group[] = [applications, tenants, tokens, reactors, webhooks, sessions];

/** The commands about the command line itself. */
export const SHELL_COMMANDS: readonly Command[] = [
  completionCommand(() => [...VAULT_COMMANDS, ...ADMIN_COMMANDS, ...SHELL_COMMANDS]),
];
