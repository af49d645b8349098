// Package cli is the bl command line: parsing, one file per command,
// printing, exit codes, and the hand-over of what the lean bl does not
// link to bl-git.
//
// Where things live:
//
//   - commands.go: every command, in the order bl --help lists them. A new
//     command is one row there and its file, cmd_NAME.go, which holds its
//     kong struct (flags and arguments), its Help text and its Run(*App).
//     aliases.go: other names for commands, and the typo suggestion.
//   - app.go: App, what a command runs against (globals, Stdin, Stdout,
//     Stderr, Getenv, the backlog opened on first use), and Main, which
//     runs one command line. Commands read input and environment through
//     App, never os.Stdin or os.Getenv, so tests run them in process.
//     What stays with the process: tuning the collector (GOGC) and the
//     hand-over (handover.go), which replaces the process.
//   - parser.go: the kong parser, the global flags, finding the command
//     in the arguments; help.go prints help, flags.go reads flag values
//     (byte for byte), card_id.go the card a command names.
//   - exit.go: errors to exit codes, --json error objects, warnings.
//   - actor.go: who is acting (--actor, BL_ACTOR, user@host) and the lease
//     owner a command stands for.
//   - output.go, events.go, standing.go, relatives.go, colour.go: how
//     cards, events and their standing print, as text and as --json.
//   - extensions.go: Extensions, the one seam between the binaries. The
//     lean bl (cmd/bl) passes none; bl-git (cmd/bl-git) passes
//     gitcli.Extensions: git (git.go's interface, remote.go's owner
//     commands through a remote), bl serve, bl mcp, bl board and webhook
//     delivery. A command that needs one the binary lacks is handed over to
//     bl-git before anything is read (handover.go, gitCommand).
//   - session.go: Session, command lines run in process against one open
//     backlog (bl mcp's tool calls).
//   - hooks.go: local hooks and webhooks run after a command's events are
//     durable; discover.go finds the backlog; worktree_note.go explains a
//     linked worktree's stale copy; setup_files.go edits agent runtimes'
//     settings (bl setup); protocol.go is the agent protocol text.
//   - failpoint.go: crash points, only in builds tagged bl_failpoints.
//
// The end-to-end tests are testdata/script/*.txtar at the repository
// root, run by TestScripts (main_test.go) against real bl and bl-git
// processes.
package cli
