/**
 * Generated from openapi.json by openapi-typescript: do not edit by hand.
 * `npm run openapi` rewrites openapi.json from the server's routes, then this file from openapi.json;
 * packages/sdk/test/generated-types.test.ts fails when this file is out of date.
 */

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The process is up */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            status: string;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The store is reachable and migrated, and the master key can be used */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description `ready`: the store answers and the master key's provider (HSM, KMS) answers. `degraded`: the provider does not answer; tenant keys it unwrapped recently still serve, other requests answer 503 `master-key-unavailable`. */
                            status: "ready" | "degraded";
                            /**
                             * @description Present when `degraded`: what is degraded.
                             * @enum {string}
                             */
                            master_key?: "unavailable";
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/applications": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List Applications */
        get: {
            parameters: {
                query?: {
                    /** @description Repeat to filter by several ids. */
                    id?: string[];
                    /** @description Page number, from 1. */
                    page?: number;
                    /** @description Items per page, 1–100. */
                    size?: number;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            pagination: {
                                total_items: number;
                                page_number: number;
                                page_size: number;
                                total_pages: number;
                            };
                            data: {
                                /** Format: uuid */
                                id: string;
                                /** Format: uuid */
                                tenant_id: string;
                                name: string;
                                /** @enum {string} */
                                type: "private" | "public" | "management";
                                permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                                rules: {
                                    description?: string;
                                    /** @description Lower values take precedence. */
                                    priority: number;
                                    /** @description A path such as /pci/high/. */
                                    container?: string;
                                    conditions?: {
                                        /** @enum {string} */
                                        attribute: "id" | "container";
                                        /** @enum {string} */
                                        operator: "starts_with" | "equals";
                                        value: string;
                                    }[];
                                    /** @enum {string} */
                                    transform: "redact" | "mask" | "reveal";
                                    permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                                }[];
                                /** Format: uuid */
                                created_by?: string;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: uuid */
                                modified_by?: string;
                                /** Format: date-time */
                                modified_at?: string;
                                /** Format: date-time */
                                expires_at?: string;
                            }[];
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        /** Create an Application */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        name: string;
                        /** @enum {string} */
                        type: "private" | "public" | "management";
                        /** @description Permissions granted; absent or null for none. */
                        permissions?: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[] | null;
                        /** @description Access rules, tried by priority; absent or null for none. */
                        rules?: {
                            description?: string;
                            /** @description Lower values take precedence. */
                            priority: number;
                            /** @description A path such as /pci/high/. */
                            container?: string;
                            conditions?: {
                                /** @enum {string} */
                                attribute: "id" | "container";
                                /** @enum {string} */
                                operator: "starts_with" | "equals";
                                value: string;
                            }[];
                            /** @enum {string} */
                            transform: "redact" | "mask" | "reveal";
                            permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                        }[] | null;
                        /**
                         * Format: date-time
                         * @description When the Application is deleted; absent or null for never.
                         */
                        expires_at?: string | null;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            /** Format: uuid */
                            tenant_id: string;
                            name: string;
                            /** @enum {string} */
                            type: "private" | "public" | "management";
                            permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            rules: {
                                description?: string;
                                /** @description Lower values take precedence. */
                                priority: number;
                                /** @description A path such as /pci/high/. */
                                container?: string;
                                conditions?: {
                                    /** @enum {string} */
                                    attribute: "id" | "container";
                                    /** @enum {string} */
                                    operator: "starts_with" | "equals";
                                    value: string;
                                }[];
                                /** @enum {string} */
                                transform: "redact" | "mask" | "reveal";
                                permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            }[];
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                            /** Format: date-time */
                            expires_at?: string;
                            /** @description The API key; shown only in this response. */
                            key: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/applications/key": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get the Application of the calling key */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            /** Format: uuid */
                            tenant_id: string;
                            name: string;
                            /** @enum {string} */
                            type: "private" | "public" | "management";
                            permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            rules: {
                                description?: string;
                                /** @description Lower values take precedence. */
                                priority: number;
                                /** @description A path such as /pci/high/. */
                                container?: string;
                                conditions?: {
                                    /** @enum {string} */
                                    attribute: "id" | "container";
                                    /** @enum {string} */
                                    operator: "starts_with" | "equals";
                                    value: string;
                                }[];
                                /** @enum {string} */
                                transform: "redact" | "mask" | "reveal";
                                permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            }[];
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                            /** Format: date-time */
                            expires_at?: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/applications/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get an Application */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            /** Format: uuid */
                            tenant_id: string;
                            name: string;
                            /** @enum {string} */
                            type: "private" | "public" | "management";
                            permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            rules: {
                                description?: string;
                                /** @description Lower values take precedence. */
                                priority: number;
                                /** @description A path such as /pci/high/. */
                                container?: string;
                                conditions?: {
                                    /** @enum {string} */
                                    attribute: "id" | "container";
                                    /** @enum {string} */
                                    operator: "starts_with" | "equals";
                                    value: string;
                                }[];
                                /** @enum {string} */
                                transform: "redact" | "mask" | "reveal";
                                permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            }[];
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                            /** Format: date-time */
                            expires_at?: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        /**
         * Update an Application
         * @description The type cannot be changed.
         */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        name: string;
                        /** @description Permissions granted; absent or null for none. */
                        permissions?: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[] | null;
                        /** @description Access rules, tried by priority; absent or null for none. */
                        rules?: {
                            description?: string;
                            /** @description Lower values take precedence. */
                            priority: number;
                            /** @description A path such as /pci/high/. */
                            container?: string;
                            conditions?: {
                                /** @enum {string} */
                                attribute: "id" | "container";
                                /** @enum {string} */
                                operator: "starts_with" | "equals";
                                value: string;
                            }[];
                            /** @enum {string} */
                            transform: "redact" | "mask" | "reveal";
                            permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                        }[] | null;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            /** Format: uuid */
                            tenant_id: string;
                            name: string;
                            /** @enum {string} */
                            type: "private" | "public" | "management";
                            permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            rules: {
                                description?: string;
                                /** @description Lower values take precedence. */
                                priority: number;
                                /** @description A path such as /pci/high/. */
                                container?: string;
                                conditions?: {
                                    /** @enum {string} */
                                    attribute: "id" | "container";
                                    /** @enum {string} */
                                    operator: "starts_with" | "equals";
                                    value: string;
                                }[];
                                /** @enum {string} */
                                transform: "redact" | "mask" | "reveal";
                                permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            }[];
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                            /** Format: date-time */
                            expires_at?: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        post?: never;
        /** Delete an Application */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Deleted. */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/applications/{id}/regenerate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Regenerate an Application's key
         * @description The previous key stops working immediately.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            /** Format: uuid */
                            tenant_id: string;
                            name: string;
                            /** @enum {string} */
                            type: "private" | "public" | "management";
                            permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            rules: {
                                description?: string;
                                /** @description Lower values take precedence. */
                                priority: number;
                                /** @description A path such as /pci/high/. */
                                container?: string;
                                conditions?: {
                                    /** @enum {string} */
                                    attribute: "id" | "container";
                                    /** @enum {string} */
                                    operator: "starts_with" | "equals";
                                    value: string;
                                }[];
                                /** @enum {string} */
                                transform: "redact" | "mask" | "reveal";
                                permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            }[];
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                            /** Format: date-time */
                            expires_at?: string;
                            /** @description The API key; shown only in this response. */
                            key: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/permissions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the permissions, with the Application types that may hold each
         * @description Any valid key may read the catalog (it is the same for every caller). `application_type` keeps the permissions that type may hold.
         */
        get: {
            parameters: {
                query?: {
                    application_type?: "private" | "public" | "management";
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /**
                             * @description A permission; which ones an Application may hold depends on its type.
                             * @enum {string}
                             */
                            type: "token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read";
                            description: string;
                            application_types: ("private" | "public" | "management")[];
                        }[];
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/reactors": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List reactors */
        get: {
            parameters: {
                query?: {
                    /** @description Repeat to filter by several ids. */
                    id?: string[];
                    /** @description Case-insensitive. Without `*`, names containing this text; with `*`, names matching it as a whole, each `*` standing for any run of characters (`pay*`, `*-eu`, `stripe*refund`). */
                    name?: string;
                    /** @description Page number, from 1. */
                    page?: number;
                    /** @description Items per page, 1–100. */
                    size?: number;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            pagination: {
                                total_items: number;
                                page_number: number;
                                page_size: number;
                                total_pages: number;
                            };
                            data: {
                                /** Format: uuid */
                                id: string;
                                /** Format: uuid */
                                tenant_id: string;
                                name: string;
                                code: string;
                                configuration: {
                                    [key: string]: string;
                                };
                                /**
                                 * Format: uuid
                                 * @description The reactor's Application, if it has one. Not in Basis Theory's model, where only create shows it.
                                 */
                                application_id?: string;
                                /** Format: uuid */
                                created_by?: string;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: uuid */
                                modified_by?: string;
                                /** Format: date-time */
                                modified_at?: string;
                            }[];
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        /**
         * Create a reactor
         * @description The one response that includes the reactor's Application (without its key).
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        name: string;
                        /** @description JavaScript (CommonJS) exporting an async function of `{ args, configuration, svc }`; compiled on every write, and requiring only allowed modules. */
                        code: string;
                        /** @description Names to string values, available to the code as `configuration`; at most 100 entries, names of 1–200 characters, values of at most 10000 characters. Encrypted at rest. Required; `{}` for none. */
                        configuration: {
                            [key: string]: string;
                        };
                        /** @description The public or private Application of this tenant that `svc` acts as; other members are ignored. Absent or null for none. */
                        application?: {
                            /** Format: uuid */
                            id: string;
                        } | null;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            /** Format: uuid */
                            tenant_id: string;
                            name: string;
                            code: string;
                            configuration: {
                                [key: string]: string;
                            };
                            /**
                             * Format: uuid
                             * @description The reactor's Application, if it has one. Not in Basis Theory's model, where only create shows it.
                             */
                            application_id?: string;
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                            application?: {
                                /** Format: uuid */
                                id: string;
                                /** Format: uuid */
                                tenant_id: string;
                                name: string;
                                /** @enum {string} */
                                type: "private" | "public" | "management";
                                permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                                rules: {
                                    description?: string;
                                    /** @description Lower values take precedence. */
                                    priority: number;
                                    /** @description A path such as /pci/high/. */
                                    container?: string;
                                    conditions?: {
                                        /** @enum {string} */
                                        attribute: "id" | "container";
                                        /** @enum {string} */
                                        operator: "starts_with" | "equals";
                                        value: string;
                                    }[];
                                    /** @enum {string} */
                                    transform: "redact" | "mask" | "reveal";
                                    permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                                }[];
                                /** Format: uuid */
                                created_by?: string;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: uuid */
                                modified_by?: string;
                                /** Format: date-time */
                                modified_at?: string;
                                /** Format: date-time */
                                expires_at?: string;
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/reactors/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a reactor */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            /** Format: uuid */
                            tenant_id: string;
                            name: string;
                            code: string;
                            configuration: {
                                [key: string]: string;
                            };
                            /**
                             * Format: uuid
                             * @description The reactor's Application, if it has one. Not in Basis Theory's model, where only create shows it.
                             */
                            application_id?: string;
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        /** Replace a reactor */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            /** @description A full replacement: configuration is required (`{}` for none), an absent application is removed. */
            requestBody: {
                content: {
                    "application/json": {
                        name: string;
                        /** @description JavaScript (CommonJS) exporting an async function of `{ args, configuration, svc }`; compiled on every write, and requiring only allowed modules. */
                        code: string;
                        /** @description Names to string values, available to the code as `configuration`; at most 100 entries, names of 1–200 characters, values of at most 10000 characters. Encrypted at rest. Required; `{}` for none. */
                        configuration: {
                            [key: string]: string;
                        };
                        /** @description The public or private Application of this tenant that `svc` acts as; other members are ignored. Absent or null for none. */
                        application?: {
                            /** Format: uuid */
                            id: string;
                        } | null;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            /** Format: uuid */
                            tenant_id: string;
                            name: string;
                            code: string;
                            configuration: {
                                [key: string]: string;
                            };
                            /**
                             * Format: uuid
                             * @description The reactor's Application, if it has one. Not in Basis Theory's model, where only create shows it.
                             */
                            application_id?: string;
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        post?: never;
        /** Delete a reactor */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Deleted. */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        options?: never;
        head?: never;
        /**
         * Update a reactor (JSON merge patch)
         * @description Content-Type must be application/merge-patch+json; any other is answered with 415.
         */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        name?: string;
                        /** @description JavaScript (CommonJS) exporting an async function of `{ args, configuration, svc }`; compiled on every write, and requiring only allowed modules. */
                        code?: string;
                        /** @description Merged name by name; a null value removes that name, and null for the whole map empties it. */
                        configuration?: {
                            [key: string]: string | null;
                        } | null;
                        /** @description Sets the Application; null removes it. */
                        application?: {
                            /** Format: uuid */
                            id: string;
                        } | null;
                    };
                };
            };
            responses: {
                /** @description Updated. */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        trace?: never;
    };
    "/reactors/{id}/react": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Invoke a reactor with detokenized arguments
         * @description Synchronous without `callback_url` (200 with the result); asynchronous with it (202 with the invocation's id; the outcome is delivered as a signed webhook). An asynchronous call beyond the tenant's bound of unsettled invocations (TESSERA_ASYNC_MAX_QUEUED_PER_TENANT) is a 429 with Retry-After.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Arguments for the reactor; detokenization expressions anywhere in it (`{{ <token id> }}`, `{{ token: <token id> }}`, each optionally followed by filters) are detokenized. Absent or null: `{}`. */
                        args?: unknown;
                        /** @description Makes the invocation asynchronous: answered 202 at once, its outcome POSTed to this http(s) URL as a signed Standard Webhooks message. Private, loopback and link-local targets are refused. Absent or null: synchronous. */
                        callback_url?: string | null;
                        /**
                         * @deprecated
                         * @description The same as `callback_url`, in the spelling Basis Theory's JavaScript SDK sends (wire-format §7). Giving both with different values is a 400.
                         */
                        callbackUrl?: string | null;
                        /** @description Asynchronous invocations only: how long the reactor may run; absent or null for 10000. */
                        timeout_ms?: number | null;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description What the reactor returned as `raw`. */
                            raw?: unknown;
                            /** @description The reactor's `tokenize` output, tokenized. */
                            tokens?: unknown;
                        };
                    };
                };
                /** @description Default Response */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            /** @enum {string} */
                            status: "pending";
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/reactors/{id}/invocations/{invocation_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get an asynchronous invocation: its state, outcome and webhook deliveries
         * @description Visible only to the Application that made the invocation.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                    invocation_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            /** Format: uuid */
                            reactor_id: string;
                            /** @enum {string} */
                            status: "pending" | "running" | "completed" | "failed";
                            callback_url: string;
                            timeout_ms: number;
                            /** @description Runs started; more than one after an instance stopped mid-run. */
                            run_attempts: number;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            started_at?: string;
                            /** Format: date-time */
                            finished_at?: string;
                            result?: {
                                /** @description What the reactor returned as `raw`. */
                                raw?: unknown;
                                /** @description The reactor's `tokenize` output, tokenized. */
                                tokens?: unknown;
                            };
                            /** @description The HTTP answer the reactor chose (CustomHttpResponseError). */
                            response?: {
                                status: number;
                                headers: {
                                    [key: string]: string;
                                };
                                body: unknown;
                            };
                            /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                            error?: {
                                type: string;
                                title: string;
                                status: number;
                                detail?: string;
                                instance?: string;
                                errors?: {
                                    [key: string]: string[];
                                };
                            };
                            delivery?: {
                                /** @enum {string} */
                                status: "pending" | "delivered" | "failed";
                                attempts: {
                                    attempt: number;
                                    /** Format: date-time */
                                    attempted_at: string;
                                    duration_ms: number;
                                    response_status?: number;
                                    error?: string;
                                }[];
                                /** Format: date-time */
                                next_attempt_at?: string;
                                /** Format: date-time */
                                delivered_at?: string;
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tenants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create a tenant and its first management Application
         * @description The new Application's key is in `application.key`, shown only in this response.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        name: string;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            name: string;
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at: string;
                            application: {
                                /** Format: uuid */
                                id: string;
                                /** Format: uuid */
                                tenant_id: string;
                                name: string;
                                /** @enum {string} */
                                type: "private" | "public" | "management";
                                permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                                rules: {
                                    description?: string;
                                    /** @description Lower values take precedence. */
                                    priority: number;
                                    /** @description A path such as /pci/high/. */
                                    container?: string;
                                    conditions?: {
                                        /** @enum {string} */
                                        attribute: "id" | "container";
                                        /** @enum {string} */
                                        operator: "starts_with" | "equals";
                                        value: string;
                                    }[];
                                    /** @enum {string} */
                                    transform: "redact" | "mask" | "reveal";
                                    permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                                }[];
                                /** Format: uuid */
                                created_by?: string;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: uuid */
                                modified_by?: string;
                                /** Format: date-time */
                                modified_at?: string;
                                /** Format: date-time */
                                expires_at?: string;
                                /** @description The API key; shown only in this response. */
                                key: string;
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tenants/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Shred a tenant: destroy its keys, so that nothing it stored can be decrypted again
         * @description Crypto-shredding (docs/keys.md#shredding-a-tenant). Only the bootstrap tenant's management Applications may, and not of the bootstrap tenant itself. The tenant's keys, tokens, reactors, invocations, idempotent answers and Applications are deleted in one transaction; the tenant's id and audit log remain, and the shredding is recorded in the bootstrap tenant's log.
         */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            /** Format: date-time */
                            shredded_at: string;
                            /** @description Rows deleted, by table. The tenant row and its audit log remain. */
                            destroyed: {
                                tenant_keys: number;
                                tokens: number;
                                reactors: number;
                                reactor_invocations: number;
                                idempotency_keys: number;
                                applications: number;
                            };
                            /** @description Whether the store's files hold no copy of the deleted rows: true on SQLite once its WAL is truncated; false on PostgreSQL, whose dead rows stay until VACUUM reuses their space (docs/keys.md#shredding-a-tenant). */
                            files_scrubbed: boolean;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tenants/self": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get the caller's tenant */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            id: string;
                            name: string;
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List tokens */
        get: {
            parameters: {
                query?: {
                    id?: string[];
                    type?: "token" | "card" | "bank" | "card_number" | "social_security_number" | "employer_id_number" | "us_bank_account_number" | "us_bank_routing_number";
                    /** @description Page number, from 1. */
                    page?: number;
                    /** @description Items per page, 1–100. */
                    size?: number;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            pagination: {
                                total_items: number;
                                page_number: number;
                                page_size: number;
                                total_pages: number;
                            };
                            data: {
                                id: string;
                                /** @enum {string} */
                                type: "token" | "card" | "bank" | "card_number" | "social_security_number" | "employer_id_number" | "us_bank_account_number" | "us_bank_routing_number";
                                /** Format: uuid */
                                tenant_id: string;
                                /** @description Any JSON value. */
                                data?: unknown;
                                /** @description Any JSON value. */
                                mask?: unknown;
                                metadata?: {
                                    [key: string]: string;
                                };
                                fingerprint?: string;
                                fingerprint_expression?: string;
                                search_indexes?: string[];
                                containers: string[];
                                /** Format: date-time */
                                expires_at?: string;
                                /** Format: uuid */
                                created_by?: string;
                                /** Format: date-time */
                                created_at?: string;
                                /** Format: uuid */
                                modified_by?: string;
                                /** Format: date-time */
                                modified_at?: string;
                                _extras?: {
                                    deduplicated: boolean;
                                };
                            }[];
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        /** Create a token */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description 3–400 characters, or an alias expression. */
                        id?: string;
                        /** @enum {string} */
                        type?: "token" | "card" | "bank" | "card_number" | "social_security_number" | "employer_id_number" | "us_bank_account_number" | "us_bank_routing_number";
                        /** @description Any JSON value. */
                        data: unknown;
                        /** @description Non-sensitive string pairs; searchable, never encrypted. */
                        metadata?: {
                            [key: string]: string;
                        };
                        search_indexes?: string[];
                        fingerprint_expression?: string;
                        mask?: string | {
                            [key: string]: string;
                        };
                        deduplicate_token?: boolean;
                        /**
                         * Format: date-time
                         * @description When the token expires; absent or null for never.
                         */
                        expires_at?: string | null;
                        containers?: string[];
                        /** @description Deprecated; accepted and ignored. */
                        privacy?: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            /** @enum {string} */
                            type: "token" | "card" | "bank" | "card_number" | "social_security_number" | "employer_id_number" | "us_bank_account_number" | "us_bank_routing_number";
                            /** Format: uuid */
                            tenant_id: string;
                            /** @description Any JSON value. */
                            data?: unknown;
                            /** @description Any JSON value. */
                            mask?: unknown;
                            metadata?: {
                                [key: string]: string;
                            };
                            fingerprint?: string;
                            fingerprint_expression?: string;
                            search_indexes?: string[];
                            containers: string[];
                            /** Format: date-time */
                            expires_at?: string;
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at?: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                            _extras?: {
                                deduplicated: boolean;
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tokens/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Search tokens
         * @description Results are ordered by created_at descending, then id; each token's data is shown through the caller's rule for token:search. New tokens are searchable as soon as their create returns. The data: terms an API key may search are limited per minute (429 with Retry-After).
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /**
                         * @description Lucene-style query (spec §4.1, docs/search.md); empty or null matches every token the caller may search. At most 4 KiB, 64 terms and 16 levels of parentheses.
                         * @example type:social_security_number AND metadata.region:eu AND created_at:[2025-01-01 TO *]
                         */
                        query?: string | null;
                        /**
                         * @description Page number, from 1; absent or null for 1.
                         * @default 1
                         */
                        page?: number | null;
                        /**
                         * @description Items per page, 1–100; absent or null for 20.
                         * @default 20
                         */
                        size?: number | null;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            pagination: {
                                total_items: number;
                                page_number: number;
                                page_size: number;
                                total_pages: number;
                            };
                            data: {
                                id: string;
                                /** @enum {string} */
                                type: "token" | "card" | "bank" | "card_number" | "social_security_number" | "employer_id_number" | "us_bank_account_number" | "us_bank_routing_number";
                                /** Format: uuid */
                                tenant_id: string;
                                /** @description Any JSON value. */
                                data?: unknown;
                                /** @description Any JSON value. */
                                mask?: unknown;
                                metadata?: {
                                    [key: string]: string;
                                };
                                fingerprint?: string;
                                fingerprint_expression?: string;
                                search_indexes?: string[];
                                containers: string[];
                                /** Format: date-time */
                                expires_at?: string;
                                /** Format: uuid */
                                created_by?: string;
                                /** Format: date-time */
                                created_at?: string;
                                /** Format: uuid */
                                modified_by?: string;
                                /** Format: date-time */
                                modified_at?: string;
                                _extras?: {
                                    deduplicated: boolean;
                                };
                            }[];
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List tokens, walked by cursor (Basis Theory's v2 list)
         * @description Newest first (created_at descending, then id). `pagination.next` is an opaque cursor bound to this tenant, key's Application and filters: send it back as `start` for the next page; it is null on the last. A token created or deleted during the walk never makes another appear twice or go missing.
         */
        get: {
            parameters: {
                query?: {
                    type?: "token" | "card" | "bank" | "card_number" | "social_security_number" | "employer_id_number" | "us_bank_account_number" | "us_bank_routing_number";
                    /** @description Tokens in this container or below it. */
                    container?: string;
                    fingerprint?: string;
                    /** @description A JSON object of metadata pairs that must all match (exact, case-insensitive): `{"region":"eu"}`. */
                    metadata?: string;
                    /** @description The `pagination.next` of the previous page, unaltered; absent for the first page. */
                    start?: string;
                    /** @description Items per page, 1–100. */
                    size?: number;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            pagination: {
                                page_size: number;
                                /** @description The cursor of the next page (send it as `start`); null on the last page. */
                                next: string | null;
                            };
                            data: {
                                id: string;
                                /** @enum {string} */
                                type: "token" | "card" | "bank" | "card_number" | "social_security_number" | "employer_id_number" | "us_bank_account_number" | "us_bank_routing_number";
                                /** Format: uuid */
                                tenant_id: string;
                                /** @description Any JSON value. */
                                data?: unknown;
                                /** @description Any JSON value. */
                                mask?: unknown;
                                metadata?: {
                                    [key: string]: string;
                                };
                                fingerprint?: string;
                                fingerprint_expression?: string;
                                search_indexes?: string[];
                                containers: string[];
                                /** Format: date-time */
                                expires_at?: string;
                                /** Format: uuid */
                                created_by?: string;
                                /** Format: date-time */
                                created_at?: string;
                                /** Format: uuid */
                                modified_by?: string;
                                /** Format: date-time */
                                modified_at?: string;
                                _extras?: {
                                    deduplicated: boolean;
                                };
                            }[];
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/tokens/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Search tokens, walked by cursor (Basis Theory's v2 search)
         * @description The whole query language of POST /tokens/search (a superset of Basis Theory's v2), with the same rules and order; pages are walked with the opaque `pagination.next` cursor sent back as `start`, which is bound to this tenant, key's Application and query. An absent body is `{}`.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /**
                         * @description Lucene-style query (spec §4.1, docs/search.md); empty or null matches every token the caller may search. At most 4 KiB, 64 terms and 16 levels of parentheses.
                         * @example type:social_security_number AND metadata.region:eu AND created_at:[2025-01-01 TO *]
                         */
                        query?: string | null;
                        /** @description The `pagination.next` of the previous page; absent or null at first. */
                        start?: string | null;
                        /**
                         * @description Items per page, 1–100; absent or null for 20.
                         * @default 20
                         */
                        size?: number | null;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            pagination: {
                                page_size: number;
                                /** @description The cursor of the next page (send it as `start`); null on the last page. */
                                next: string | null;
                            };
                            data: {
                                id: string;
                                /** @enum {string} */
                                type: "token" | "card" | "bank" | "card_number" | "social_security_number" | "employer_id_number" | "us_bank_account_number" | "us_bank_routing_number";
                                /** Format: uuid */
                                tenant_id: string;
                                /** @description Any JSON value. */
                                data?: unknown;
                                /** @description Any JSON value. */
                                mask?: unknown;
                                metadata?: {
                                    [key: string]: string;
                                };
                                fingerprint?: string;
                                fingerprint_expression?: string;
                                search_indexes?: string[];
                                containers: string[];
                                /** Format: date-time */
                                expires_at?: string;
                                /** Format: uuid */
                                created_by?: string;
                                /** Format: date-time */
                                created_at?: string;
                                /** Format: uuid */
                                modified_by?: string;
                                /** Format: date-time */
                                modified_at?: string;
                                _extras?: {
                                    deduplicated: boolean;
                                };
                            }[];
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tokens/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a token */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            /** @enum {string} */
                            type: "token" | "card" | "bank" | "card_number" | "social_security_number" | "employer_id_number" | "us_bank_account_number" | "us_bank_routing_number";
                            /** Format: uuid */
                            tenant_id: string;
                            /** @description Any JSON value. */
                            data?: unknown;
                            /** @description Any JSON value. */
                            mask?: unknown;
                            metadata?: {
                                [key: string]: string;
                            };
                            fingerprint?: string;
                            fingerprint_expression?: string;
                            search_indexes?: string[];
                            containers: string[];
                            /** Format: date-time */
                            expires_at?: string;
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at?: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                            _extras?: {
                                deduplicated: boolean;
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** Delete a token */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Deleted. */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        options?: never;
        head?: never;
        /**
         * Update a token (JSON merge patch)
         * @description Content-Type must be application/merge-patch+json; data, metadata and mask are merged. Changing mask, search_indexes or fingerprint_expression needs token:read through a rule that reveals the token (else 403); the answer shows the data through the caller's token:read rule.
         */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Any JSON value. */
                        data?: unknown;
                        metadata?: {
                            [key: string]: string | null;
                        } | null;
                        search_indexes?: string[] | null;
                        fingerprint_expression?: string | null;
                        mask?: string | {
                            [key: string]: string | null;
                        } | null;
                        deduplicate_token?: boolean;
                        /** Format: date-time */
                        expires_at?: string | null;
                        containers?: string[];
                        /** @description Deprecated; accepted and ignored. */
                        privacy?: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            /** @enum {string} */
                            type: "token" | "card" | "bank" | "card_number" | "social_security_number" | "employer_id_number" | "us_bank_account_number" | "us_bank_routing_number";
                            /** Format: uuid */
                            tenant_id: string;
                            /** @description Any JSON value. */
                            data?: unknown;
                            /** @description Any JSON value. */
                            mask?: unknown;
                            metadata?: {
                                [key: string]: string;
                            };
                            fingerprint?: string;
                            fingerprint_expression?: string;
                            search_indexes?: string[];
                            containers: string[];
                            /** Format: date-time */
                            expires_at?: string;
                            /** Format: uuid */
                            created_by?: string;
                            /** Format: date-time */
                            created_at?: string;
                            /** Format: uuid */
                            modified_by?: string;
                            /** Format: date-time */
                            modified_at?: string;
                            _extras?: {
                                deduplicated: boolean;
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        trace?: never;
    };
    "/tokenize": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Tokenize many values at once, keeping the request's shape */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            /** @description Any JSON value. */
            requestBody: {
                content: {
                    "application/json": unknown;
                };
            };
            responses: {
                /** @description Any JSON value. */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": unknown;
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/detokenize": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Replace {{ <token id> }} and {{ token: <token id> }} expressions, with filters, by what the caller may read */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            /** @description Any JSON value. */
            requestBody: {
                content: {
                    "application/json": unknown;
                };
            };
            responses: {
                /** @description Any JSON value. */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": unknown;
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get the tenant's webhook signing secret */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description `whsec_` and the key in base64, as Standard Webhooks libraries take it. */
                            secret: string;
                            version: number;
                            /** Format: date-time */
                            created_at: string;
                            /**
                             * Format: date-time
                             * @description After a rotation: until when messages are also signed with the previous secret.
                             */
                            previous_valid_until?: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/secret/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rotate the tenant's webhook signing secret
         * @description Messages are signed with the new secret and, for 24 hours, with the previous one too: both signatures are in `webhook-signature`, so receivers switch secrets without losing a message.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description `whsec_` and the key in base64, as Standard Webhooks libraries take it. */
                            secret: string;
                            version: number;
                            /** Format: date-time */
                            created_at: string;
                            /**
                             * Format: date-time
                             * @description After a rotation: until when messages are also signed with the previous secret.
                             */
                            previous_valid_until?: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/logs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the tenant's audit log, newest first */
        get: {
            parameters: {
                query?: {
                    entity_type?: "token" | "reactor" | "application" | "tenant" | "webhook_secret" | "session";
                    entity_id?: string;
                    actor_id?: string;
                    action?: "token.create" | "token.read" | "token.list" | "token.update" | "token.delete" | "token.search" | "token.detokenize" | "token.explain" | "reactor.create" | "reactor.update" | "reactor.delete" | "reactor.react" | "reactor.react_async" | "application.create" | "application.update" | "application.regenerate_key" | "application.delete" | "tenant.create" | "tenant.rotate_data_key" | "tenant.rotate_master_key" | "tenant.shred" | "webhook.rotate_secret" | "session.create" | "session.authorize";
                    /** @description From this time on (inclusive). */
                    start_date?: string;
                    /** @description Before this time (exclusive). */
                    end_date?: string;
                    /** @description Page number, from 1. */
                    page?: number;
                    /** @description Items per page, 1–100. */
                    size?: number;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            pagination: {
                                total_items: number;
                                page_number: number;
                                page_size: number;
                                total_pages: number;
                            };
                            data: {
                                /** Format: uuid */
                                id: string;
                                /** Format: uuid */
                                tenant_id: string;
                                /** @description The acting Application; absent for Tessera itself. */
                                actor_id?: string;
                                /** @enum {string} */
                                action: "token.create" | "token.read" | "token.list" | "token.update" | "token.delete" | "token.search" | "token.detokenize" | "token.explain" | "reactor.create" | "reactor.update" | "reactor.delete" | "reactor.react" | "reactor.react_async" | "application.create" | "application.update" | "application.regenerate_key" | "application.delete" | "tenant.create" | "tenant.rotate_data_key" | "tenant.rotate_master_key" | "tenant.shred" | "webhook.rotate_secret" | "session.create" | "session.authorize";
                                /** @enum {string} */
                                entity_type: "token" | "reactor" | "application" | "tenant" | "webhook_secret" | "session";
                                entity_id?: string;
                                /** @description The access rule that decided how the token was shown or used. */
                                rule?: {
                                    container: string;
                                    priority: number;
                                    transform: string;
                                };
                                /** @description Ids, counts, a search's query with its values removed; never token data or keys. */
                                details?: {
                                    [key: string]: unknown;
                                };
                                request_id?: string;
                                /** @description Its place in the tenant's tamper-evident chain; absent until sealed (about a second). */
                                sequence?: number;
                                /** Format: date-time */
                                created_at: string;
                            }[];
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/access/explain": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Explain an access decision
         * @description Which of an Application's access rules decides a token permission on a token (by id) or on a token in the given containers, through the same decision the token routes make: the deciding rule, its transform, and every rule tried before it with the reason it did not decide. Never returns token data. An explanation for a token id is recorded in the audit log (token.explain).
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /**
                         * Format: uuid
                         * @description The Application whose decision to explain.
                         */
                        application_id?: string;
                        /**
                         * Format: uuid
                         * @description Instead of application_id: a session (its id is the entity_id of its session.create and session.authorize audit entries), decided as its key would be now, within its authorizing Application.
                         */
                        session_id?: string;
                        /**
                         * @description The token permission to decide.
                         * @enum {string}
                         */
                        permission: "token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use";
                        /** @description A token of the tenant: its containers are used. Give this or `containers`. */
                        token_id?: string;
                        /** @description The containers of a token, existing or not. Give this or `token_id`. */
                        containers?: string[];
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description The Application explained; for a session, the one that authorized it. */
                            application: {
                                /** Format: uuid */
                                id: string;
                                name: string;
                                /** @enum {string} */
                                type: "private" | "public" | "management";
                            };
                            /** Format: uuid */
                            session_id?: string;
                            /** @enum {string} */
                            permission: "token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use";
                            token_id?: string;
                            /** @description The token's containers, or those given (normalised to lower case). */
                            containers: string[];
                            allowed: boolean;
                            /**
                             * @description How the token's data is shown or used under the deciding rule.
                             * @enum {string}
                             */
                            transform?: "redact" | "mask" | "reveal";
                            /** @description An access rule as the decision tried it. */
                            decided_by?: {
                                /**
                                 * @description `rule`: one of the Application's rules; `permission`: a top-level permission, which acts as a rule over every container, tried after all the rules.
                                 * @enum {string}
                                 */
                                source: "rule" | "permission";
                                /** @description The rule's index in the Application's `rules` (source `rule`). */
                                index?: number;
                                /** @description Source `rule` only. */
                                priority?: number;
                                description?: string;
                                container?: string;
                                conditions?: {
                                    /** @enum {string} */
                                    attribute: "id" | "container";
                                    /** @enum {string} */
                                    operator: "starts_with" | "equals";
                                    value: string;
                                }[];
                                /** @enum {string} */
                                transform: "redact" | "mask" | "reveal";
                                permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                            };
                            /** @description Sessions only, when one of the session's rules decided: the same walk over the authorizing Application's rules, which must decide too; the session is shown no more than they show. */
                            ceiling?: {
                                allowed: boolean;
                                /** @enum {string} */
                                transform?: "redact" | "mask" | "reveal";
                                /** @description An access rule as the decision tried it. */
                                decided_by?: {
                                    /**
                                     * @description `rule`: one of the Application's rules; `permission`: a top-level permission, which acts as a rule over every container, tried after all the rules.
                                     * @enum {string}
                                     */
                                    source: "rule" | "permission";
                                    /** @description The rule's index in the Application's `rules` (source `rule`). */
                                    index?: number;
                                    /** @description Source `rule` only. */
                                    priority?: number;
                                    description?: string;
                                    container?: string;
                                    conditions?: {
                                        /** @enum {string} */
                                        attribute: "id" | "container";
                                        /** @enum {string} */
                                        operator: "starts_with" | "equals";
                                        value: string;
                                    }[];
                                    /** @enum {string} */
                                    transform: "redact" | "mask" | "reveal";
                                    permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                                };
                                passed_over: {
                                    /**
                                     * @description `rule`: one of the Application's rules; `permission`: a top-level permission, which acts as a rule over every container, tried after all the rules.
                                     * @enum {string}
                                     */
                                    source: "rule" | "permission";
                                    /** @description The rule's index in the Application's `rules` (source `rule`). */
                                    index?: number;
                                    /** @description Source `rule` only. */
                                    priority?: number;
                                    description?: string;
                                    container?: string;
                                    conditions?: {
                                        /** @enum {string} */
                                        attribute: "id" | "container";
                                        /** @enum {string} */
                                        operator: "starts_with" | "equals";
                                        value: string;
                                    }[];
                                    /** @enum {string} */
                                    transform: "redact" | "mask" | "reveal";
                                    permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                                    /**
                                     * @description `conditions`: not every condition of the rule (a session's) holds for the token; `permission`: the rule lacks the permission; `container`: its container covers none of the token's containers.
                                     * @enum {string}
                                     */
                                    reason: "conditions" | "permission" | "container";
                                    /** @description The reason in words. */
                                    detail: string;
                                }[];
                            };
                            /** @description Every rule tried before the deciding one, in precedence order; all of them when none decides. */
                            passed_over: {
                                /**
                                 * @description `rule`: one of the Application's rules; `permission`: a top-level permission, which acts as a rule over every container, tried after all the rules.
                                 * @enum {string}
                                 */
                                source: "rule" | "permission";
                                /** @description The rule's index in the Application's `rules` (source `rule`). */
                                index?: number;
                                /** @description Source `rule` only. */
                                priority?: number;
                                description?: string;
                                container?: string;
                                conditions?: {
                                    /** @enum {string} */
                                    attribute: "id" | "container";
                                    /** @enum {string} */
                                    operator: "starts_with" | "equals";
                                    value: string;
                                }[];
                                /** @enum {string} */
                                transform: "redact" | "mask" | "reveal";
                                permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                                /**
                                 * @description `conditions`: not every condition of the rule (a session's) holds for the token; `permission`: the rule lacks the permission; `container`: its container covers none of the token's containers.
                                 * @enum {string}
                                 */
                                reason: "conditions" | "permission" | "container";
                                /** @description The reason in words. */
                                detail: string;
                            }[];
                            /** @description token:create and token:update only: writing a token into containers needs a rule holding the permission on each of them. */
                            each_container?: {
                                container: string;
                                allowed: boolean;
                                /** @description An access rule as the decision tried it. */
                                decided_by?: {
                                    /**
                                     * @description `rule`: one of the Application's rules; `permission`: a top-level permission, which acts as a rule over every container, tried after all the rules.
                                     * @enum {string}
                                     */
                                    source: "rule" | "permission";
                                    /** @description The rule's index in the Application's `rules` (source `rule`). */
                                    index?: number;
                                    /** @description Source `rule` only. */
                                    priority?: number;
                                    description?: string;
                                    container?: string;
                                    conditions?: {
                                        /** @enum {string} */
                                        attribute: "id" | "container";
                                        /** @enum {string} */
                                        operator: "starts_with" | "equals";
                                        value: string;
                                    }[];
                                    /** @enum {string} */
                                    transform: "redact" | "mask" | "reveal";
                                    permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                                };
                            }[];
                            /** @description The decision in one sentence. */
                            summary: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a session (with a public key) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description The session's API key (prefix key_ses_): for the browser that created the session; shown only here. */
                            session_key: string;
                            /** @description Hand this to your backend, which authorizes the session with it (once). */
                            nonce: string;
                            /** Format: date-time */
                            expires_at: string;
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/sessions/authorize": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Authorize a session (with a private key) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        nonce: string;
                        /**
                         * Format: date-time
                         * @description Ends the session earlier (or later, up to the configured maximum) than its creation set.
                         */
                        expires_at?: string;
                        /** @description Token permissions over every token the authorizing Application reaches. */
                        permissions?: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                        /** @description Rules scoped by `conditions` (never `container`), within the authorizing Application's. */
                        rules?: {
                            description?: string;
                            /** @description Lower values take precedence. */
                            priority: number;
                            /** @description A path such as /pci/high/. */
                            container?: string;
                            conditions?: {
                                /** @enum {string} */
                                attribute: "id" | "container";
                                /** @enum {string} */
                                operator: "starts_with" | "equals";
                                value: string;
                            }[];
                            /** @enum {string} */
                            transform: "redact" | "mask" | "reveal";
                            permissions: ("token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use" | "application:create" | "application:read" | "application:update" | "application:delete" | "reactor:create" | "reactor:read" | "reactor:update" | "reactor:delete" | "tenant:create" | "tenant:read" | "webhook:read" | "webhook:update" | "log:read")[];
                        }[];
                    };
                };
            };
            responses: {
                /** @description Authorized; no body. */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": unknown;
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "4XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
                /** @description RFC 9457 problem details; `errors` maps a field to its messages. */
                "5XX": {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            type: string;
                            title: string;
                            status: number;
                            detail?: string;
                            instance?: string;
                            errors?: {
                                [key: string]: string[];
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: never;
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export type operations = Record<string, never>;
