import { useQuery } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { useSession } from "../session";
import { PageTitle, Pending } from "./ui";

/**
 * An edit page's record: none for a new one, else fetched by `id`, the page showing `title` and a status while it
 * loads or fails. `children` gets the record and a key for its form: the record's last change, so that the form
 * starts from it again after a save.
 */
export function EditPage<T extends { readonly modifiedAt?: string | undefined }>({
  title,
  queryKey,
  id,
  load,
  children,
}: {
  title: string;
  queryKey: string;
  id: string | undefined;
  load: (id: string) => Promise<T>;
  children: (record: T | undefined, formKey: string) => ReactNode;
}) {
  const existing = useQuery({
    queryKey: [queryKey, id],
    queryFn: () => load(id ?? ""),
    enabled: id !== undefined,
  });
  if (id !== undefined && existing.data === undefined) {
    return (
      <>
        <PageTitle>{title}</PageTitle>
        <Pending query={existing} />
      </>
    );
  }
  return children(existing.data, existing.data?.modifiedAt ?? id ?? "new");
}

/** The tenant's first 100 Applications, for pickers and for naming audit actors: one query every page shares. */
export function useApplications() {
  const { client } = useSession();
  return useQuery({
    queryKey: ["applications", "all"],
    queryFn: () => client.applications.list({ size: 100 }),
  });
}
