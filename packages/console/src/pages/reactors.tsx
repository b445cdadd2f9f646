import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "wouter";
import { formatTime, PagedTable, PageTitle } from "../components/ui";
import { useSession } from "../session";

export default function Reactors() {
  const { client } = useSession();
  const [page, setPage] = useState(1);
  const [name, setName] = useState("");
  const list = useQuery({
    queryKey: ["reactors", page, name],
    queryFn: () => client.reactors.list({ page, size: 20, ...(name.trim() !== "" && { name: name.trim() }) }),
  });
  return (
    <>
      <PageTitle>Reactors</PageTitle>
      <p>
        JavaScript stored in the vault and run there, with token data put into its arguments on the server.{" "}
        <Link href="/reactors/new">Create a reactor</Link>
      </p>
      <div className="field inline-form">
        <label htmlFor="reactor-filter">Filter by name</label>
        <input
          id="reactor-filter"
          value={name}
          onChange={(event) => {
            setPage(1);
            setName(event.target.value);
          }}
        />
      </div>
      <PagedTable
        label="Reactors"
        caption="Reactors of this tenant"
        columns={["Name", "Application", "Configuration", "Created"]}
        query={list}
        page={page}
        onPage={setPage}
        row={(reactor) => (
          <tr key={reactor.id}>
            <td>
              <Link href={`/reactors/${reactor.id}`}>{reactor.name}</Link>
            </td>
            <td>{reactor.applicationId ?? "—"}</td>
            <td>{Object.keys(reactor.configuration ?? {}).join(", ") || "—"}</td>
            <td>{formatTime(reactor.createdAt)}</td>
          </tr>
        )}
      />
    </>
  );
}
