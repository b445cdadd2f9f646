export { loadConfig, loadMasterKeyFile, ConfigError, type Config } from "./config.js";
export {
  openVault,
  bootstrap,
  serve,
  createLogger,
  openApiDocument,
  type Vault,
  type RunningServer,
} from "./main.js";
export { buildApp, type AppDeps } from "./app.js";
export { migrateToLatest, MigrationError } from "./storage/migrate.js";
export { StoreUnreachableError } from "./storage/availability.js";
export { StoreNotInitializedError } from "./tenants/service.js";
export { MasterKeyMismatchError, openTargetProvider } from "./keys/providers/open.js";
export { MasterKeyProviderError } from "./keys/providers/provider.js";
export { MasterKeyUnavailableError } from "./keys/providers/custody.js";
export { systemClock, type Clock } from "./shared/clock.js";
export { UnknownTenantError } from "./keys/rotation.js";
