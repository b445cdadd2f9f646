export { loadConfig, ConfigError, type Config } from "./config.js";
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
export { MasterKeyMismatchError } from "./keys/tenant-keys.js";
export { StoreNotInitializedError } from "./tenants/service.js";
export { systemClock, type Clock } from "./shared/clock.js";
export { UnknownTenantError } from "./keys/rotation.js";
