package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/ledger"
)

// TestCardTooLargeForASnapshotLine is the reported case: 250 long labels,
// then long acceptance criteria. Each event fits in a ledger line, but the
// card would not fit in a snapshot line, after which every clone failed
// with exit 6 once compacted. The update is refused with exit 2 naming the
// limit, the ledger is unchanged, and the backlog compacts and reads.
func TestCardTooLargeForASnapshotLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".backlog")
	t.Setenv("BL_ACTOR", "tester")
	run := func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if got := cli.Main(cli.Extensions{}, append([]string{"--dir", dir}, args...), &out, &errb); got != want {
			t.Fatalf("bl %s: exit %d, want %d\n%s", args[0], got, want, errb.String())
		}
		return errb.String()
	}
	long := func(flag, prefix string) []string {
		var args []string
		for i := range 250 {
			args = append(args, flag, fmt.Sprintf("%s%03d-%s", prefix, i, strings.Repeat("x", 2000)))
		}
		return args
	}
	run(0, "init")
	run(0, append([]string{"create", "--id", "A1", "--title", "big"}, long("--label", "label")...)...)
	before, err := os.ReadFile(filepath.Join(dir, ledger.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	msg := run(2, append([]string{"update", "A1"}, long("--acceptance", "acc")...)...)
	if !strings.Contains(msg, strconv.Itoa(ledger.MaxCardBytes)) || !strings.Contains(msg, "limit") {
		t.Fatalf("error does not name the limit: %s", msg)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, ledger.LedgerFile)); !bytes.Equal(before, after) {
		t.Fatal("the refused update changed the ledger")
	}
	run(0, "compact")
	if err := os.RemoveAll(filepath.Join(dir, "cache")); err != nil { // as a fresh clone has it
		t.Fatal(err)
	}
	run(0, "doctor")
	run(0, "list")
	run(0, "create", "--id", "A2", "--title", "next")
}
