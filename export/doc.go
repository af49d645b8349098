// Package export renders a backlog's cards for people and tools: a board
// to read in a pull request, the dependency DAG to look at, and tables and
// JSON to process.
//
// Every renderer is pure: it takes the cards (as ledger.Backlog.List
// returns them) and Options, and returns bytes. It reads no files and no
// clock, and its output depends only on the set of cards, not on their
// order in the slice, so the same backlog always renders to the same bytes
// and a committed export diffs cleanly.
//
// # Formats
//
//	markdown  The board. A comment naming the command that made it
//	          (Options.Command), a summary line, a table of counts per phase,
//	          then one section per lane (Ready, Claimed, Blocked, Done;
//	          every lane present, "No cards." when empty), each grouped by
//	          phase (natural order, "No phase" last), cards in claim order
//	          (priority desc, created_at asc, id asc). A card is a heading
//	          with an anchor (#card-<lower-cased id>), then one fact per
//	          line: owner, epoch and lease expiry of a claim (absolute UTC
//	          RFC 3339, never "5 minutes left"), the blocked reason, the
//	          closing note, priority, attempts, labels, parent, "Depends
//	          on" and "Needed by" links with the other card's status. The
//	          acceptance criteria follow as a checklist (ticked when the
//	          card is done), and the description as a collapsed excerpt
//	          (20 lines or 2000 bytes). Titles are escaped so "|", "*",
//	          "<", newlines and the like show as written. With
//	          Options.Graph the board also embeds the Mermaid DAG.
//	mermaid   The DAG as a Mermaid flowchart (flowchart LR), which GitHub
//	          renders inline. An edge points from a dependency to the card
//	          that depends on it: A1 --> A2 when A2 depends on A1. Nodes are
//	          c_<id> (bytes other than letters and digits written _XX),
//	          labelled "ID: title" (48 columns at most, Mermaid's special
//	          characters as #NN; entity codes) and styled by status with
//	          classDef/class. Dependencies outside the export are dashed
//	          "external" nodes.
//	dot       The same DAG for Graphviz: dot -Tsvg backlog.dot.
//	csv       RFC 4180 (CRLF line ends), a header row (CSVHeader, the JSON
//	          field names) and one row per card in claim order. List fields
//	          hold one entry per line inside the cell; times are UTC RFC
//	          3339 to the second; text cells starting with = + - @ get a
//	          leading apostrophe so spreadsheets do not evaluate them; text
//	          is Printable, as on the terminal; names (phase, labels,
//	          claim_owner) are shown as Name shows them (<U+XXXX>).
//	json      An array of cards with the card contract's field names, in
//	          claim order, indented two spaces; [] when empty.
//	jsonl     One compact card per line, in claim order.
//	beads     beads' issues.jsonl, sorted by id: the way back from bl import
//	          --from beads (beads ids, priorities and statuses mapped back).
//	html      One self-contained page (inline CSS, no script, no network):
//	          the DAG as inline SVG in a layered drawing (longest-path
//	          layers, crossing reduction, edges routed between boxes), each
//	          node linked to its card, then the board with a column per
//	          lane. Options.Now stamps it "as of" and marks expired leases,
//	          so html is the one format whose bytes depend on the time.
//
// Diff compares a committed export with a fresh one, for bl export --check.
package export
