import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "wouter";
import { formatTime, PagedTable, PageTitle } from "../components/ui";
import { useSession } from "../session";

export function Applications() {
  const { client } = useSession();
  const [page, setPage] = useState(1);
  const list = useQuery({
    queryKey: ["applications", page],
    queryFn: () => client.applications.list({ page, size: 20 }),
  });
  return (
    <>
      <PageTitle>Applications</PageTitle>
      <p>
        Each Application is one API key and what it may do: its permissions, and access rules that scope token
        permissions to containers. <Link href="/applications/new">Create an Application</Link>
      </p>
      <PagedTable
        label="Applications"
        caption="Applications of this tenant"
        columns={["Name", "Type", "Permissions", "Rules", "Expires", "Created"]}
        query={list}
        page={page}
        onPage={setPage}
        row={(app) => (
          <tr key={app.id}>
            <td>
              <Link href={`/applications/${app.id}`}>{app.name}</Link>
            </td>
            <td>{app.type}</td>
            <td>{app.permissions.join(", ") || "—"}</td>
            <td>{app.rules.length}</td>
            <td>{formatTime(app.expiresAt)}</td>
            <td>{formatTime(app.createdAt)}</td>
          </tr>
        )}
      />
    </>
  );
}
