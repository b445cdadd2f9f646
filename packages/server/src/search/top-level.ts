import { sql, type RawBuilder } from "kysely";
import { tokenGeneration } from "./compile.js";

// Which top-level containers a tenant's tokens lie in: when the caller's rules cover all of them, a search needs no
// rule check per token (search/run.ts).

/**
 * The tenant's top-level container paths (`/pci/`, `/pii/`, …), plus the root once when tokens lie in `/` itself: a
 * loose index scan of token_container_index, one index seek per path found, however many tokens there are.
 * Every path sorts right after its own top-level path, so the next top-level path is the least one after
 * `<top>` followed by anything: at or after the top with its trailing `/` raised to `0`.
 */
export function topLevelPaths(tenantId: string): RawBuilder<{ path: string | null }> {
  return sql<{ path: string | null }>`
    with recursive tops(path) as (
      select (select min(path) from token_container_index where tenant_id = ${tenantId} and path > '/')
      union all
      select (
        select min(c.path) from token_container_index as c
        where c.tenant_id = ${tenantId} and c.path >= substr(tops.path, 1, length(tops.path) - 1) || '0'
      )
      from tops where tops.path is not null
    )
    select path from tops where path is not null
    union all
    select path from (
      select path from token_container_index where tenant_id = ${tenantId} and path = '/' limit 1
    ) as root`;
}

/**
 * PostgreSQL: the tenant's top-level paths (topLevelPaths) with its token generation on every row, and one row
 * with a null path when it has none, so that the generation always comes back.
 */
export function topLevelPathsAt(tenantId: string): RawBuilder<{ path: string | null; generation: string }> {
  return sql<{ path: string | null; generation: string }>`
    select tops.path, ${tokenGeneration(tenantId)} as generation
    from (select 1 as one) as one left join (${topLevelPaths(tenantId)}) as tops on true`;
}
