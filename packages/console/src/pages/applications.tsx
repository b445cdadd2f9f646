import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "wouter";
import { formatTime, PageTitle, Pager, Problem, TableWrap } from "../components/ui";
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
      <Problem error={list.error} />
      {list.data !== undefined && (
        <>
          <TableWrap label="Applications">
            <table>
              <caption className="visually-hidden">Applications of this tenant</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Permissions</th>
                  <th scope="col">Rules</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((app) => (
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
                ))}
              </tbody>
            </table>
          </TableWrap>
          <Pager
            page={page}
            totalPages={list.data.pagination.totalPages}
            totalItems={list.data.pagination.totalItems}
            onPage={setPage}
          />
        </>
      )}
    </>
  );
}
