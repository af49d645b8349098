package ledger

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// One pulled event stamped 9999-12-31 is damage naming its line; repair
// moves it to ledger.jsonl.broken and the backlog writes again, every other
// event kept.
func TestFarFutureStampRepair(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.appendRaw(frame(`{"v":1,"id":"ffff","at":"9999-12-31T23:59:59.999999999Z","actor":"x","op":"create","card":"Z","fields":{"title":"t"}}`))
	b, err := Open(e.dir, Options{Clock: e.clk.Now})
	if err == nil {
		_, _, err = b.Create(e.ctx, CreateRequest{Mutation: m, Title: "B"})
	}
	var ce *wire.CorruptError
	if !errors.As(err, &ce) || ce.Line != 2 || !strings.HasSuffix(ce.Path, LedgerFile) || !errors.Is(err, wire.ErrStampRange) || !strings.Contains(err.Error(), "9999-12-31") {
		t.Fatalf("create after a far-future line = %v, want damage naming line 2 and its stamp", err)
	}
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil || !rep.Corrupt || len(rep.Damage) != 1 || rep.Damage[0].Kind != "stamp" || !rep.Damage[0].Repairable {
		t.Fatalf("diagnose = %+v, %v", rep, err)
	}
	after, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now())
	if err != nil || after.Corrupt {
		t.Fatalf("repair = %+v, %v", after, err)
	}
	broken, _ := os.ReadFile(filepath.Join(e.dir, BrokenFile))
	if !bytes.Contains(broken, []byte(`"id":"ffff"`)) {
		t.Fatalf("%s = %q, want the far-future line kept there", BrokenFile, broken)
	}
	b = e.open()
	if _, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, Title: "B"}); err != nil {
		t.Fatalf("create after repair: %v", err)
	}
	if _, ok := b.held().Card("A"); !ok {
		t.Fatal("card A lost by the repair")
	}
}

// The same line in an archive segment (a pulled, compacted backlog).
func TestFarFutureStampInArchiveRepair(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.appendRaw(frame(`{"v":1,"id":"ffff","at":"2026-06-01T00:00:00Z","actor":"x","op":"create","card":"Z","fields":{"title":"t"}}`))
	if _, err := e.open().Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	names, _ := store.ArchiveNames(e.dir)
	if len(names) != 1 {
		t.Fatalf("archives %v", names)
	}
	seg := filepath.Join(e.dir, filepath.FromSlash(names[0]))
	data, _ := os.ReadFile(seg)
	lines := splitLines(data)
	lines[len(lines)-1] = frame(`{"v":1,"id":"ffff","at":"9999-12-31T23:59:59.999999999Z","actor":"x","op":"create","card":"Z","fields":{"title":"t"}}`)
	if err := os.WriteFile(seg, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil || !slices.ContainsFunc(rep.Damage, func(d Damage) bool { return d.Kind == "stamp" && d.Repairable }) {
		t.Fatalf("diagnose = %+v, %v", rep, err)
	}
	if after, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now()); err != nil || after.Corrupt {
		t.Fatalf("repair = %+v, %v", after, err)
	}
	b := e.open()
	if _, ok := b.held().Card("A"); !ok {
		t.Fatal("card A lost by the repair")
	}
	if _, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, Title: "B"}); err != nil {
		t.Fatalf("create after repair: %v", err)
	}
}

// A writer whose clock reads outside the range refuses to write, rather
// than write a line every reader refuses.
func TestWriterClockOutOfRange(t *testing.T) {
	e := newEnv(t)
	e.clk.Set(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC))
	before := e.bytes()
	if _, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, Title: "A"}); err == nil || !strings.Contains(err.Error(), "clock reads 1970") {
		t.Fatalf("create with the clock at 1970 = %v", err)
	}
	if !bytes.Equal(before, e.bytes()) {
		t.Fatal("the ledger changed")
	}
}

// A lease is at most MaxTTL, at write and in the fold, so a lease's end
// never overflows (a ttl of 2^63 ns wraps to a lease already over).
func TestTTLBounded(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	if _, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w", ID: "A", TTL: wire.MaxTTL + time.Second}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("claim with a ttl over MaxTTL = %v", err)
	}
	at := t0
	create := &Event{V: 1, ID: "e1", At: at, Actor: "a", Op: OpCreate, Card: "A", Fields: &Fields{Title: strp("t")}}
	claim := &Event{V: 1, ID: "e2", At: at.Add(time.Second), Actor: "a", Op: OpClaim, Card: "A", Owner: "w", TTLSeconds: 10_000_000_000, ExpectVersion: 1, Epoch: 1}
	s := fold.Fold([]*Event{create, claim})
	if c, _ := s.Card("A"); c.Status != StatusReady || s.NumConflicts() != 1 {
		t.Fatalf("a merged-in claim with a ttl of 10^10 s: card %+v, conflicts %v", c, s.Conflicts())
	}
}

// forgeCard rewrites card id's line in the snapshot with edit applied and
// a good checksum: what anyone with push access can commit.
func forgeCard(t *testing.T, dir, id string, edit func(c map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, SnapshotFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := splitLines(data)
	found := false
	for i, l := range lines {
		if !bytes.HasPrefix(l, []byte(`{"card":{"id":"`+id+`"`)) {
			continue
		}
		var sl struct {
			Card map[string]any `json:"card"`
		}
		if err := json.Unmarshal(l, &sl); err != nil {
			t.Fatal(err)
		}
		edit(sl.Card)
		obj, err := json.Marshal(map[string]any{"card": sl.Card})
		if err != nil {
			t.Fatal(err)
		}
		lines[i], found = frame(string(obj)), true
	}
	if !found {
		t.Fatalf("no card %s in %s", id, data)
	}
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "cache", "snapshot.idx"))
}

func compacted(t *testing.T) *env {
	e := newEnv(t)
	e.create("A")
	e.create("B")
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// A snapshot line whose fields no fold writes is damage on read, never
// trusted; doctor --repair rebuilds the snapshot from the archived events.
func TestSnapshotFieldsValidated(t *testing.T) {
	for name, edit := range map[string]func(c map[string]any){
		"status markup": func(c map[string]any) { c["status"] = `<img src=x onerror=alert(1)>` },
		"100-year lease": func(c map[string]any) {
			c["status"], c["claim_owner"], c["claim_epoch"], c["version"] = "claimed", "attacker#7", 7, 8
			c["claimed_at"], c["claim_ttl_seconds"] = "2026-01-02T03:04:05Z", 100*365*86400
			c["lease_expires_at"] = "2126-01-02T03:04:05Z"
		},
		"lease end not ttl after claim": func(c map[string]any) {
			c["status"], c["claim_owner"], c["claim_epoch"], c["version"] = "claimed", "attacker#7", 1, 2
			c["claimed_at"], c["claim_ttl_seconds"] = "2026-01-02T03:04:05Z", 60
			c["lease_expires_at"] = "2099-01-02T03:04:05Z"
		},
		"owner on a ready card": func(c map[string]any) { c["claim_owner"] = "attacker" },
		"negative epoch":        func(c map[string]any) { c["claim_epoch"] = -1 },
		"bad id":                func(c map[string]any) { c["id"] = "A<script>" },
		"far-future stamp":      func(c map[string]any) { c["updated_at"] = "9999-12-31T23:59:59.999999999Z" },
	} {
		t.Run(name, func(t *testing.T) {
			e := compacted(t)
			forgeCard(t, e.dir, "A", edit)
			if _, err := Open(e.dir, Options{Clock: e.clk.Now}); !errors.Is(err, ErrCorrupt) {
				if err == nil {
					_, err = e.open().List(Filter{}, "")
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("reading a snapshot with %s = %v, want damage", name, err)
				}
			}
			rep, err := Diagnose(e.dir, e.clk.Now())
			if err != nil || !rep.Corrupt || !slices.ContainsFunc(rep.Damage, func(d Damage) bool { return d.File == SnapshotFile && d.Repairable }) {
				t.Fatalf("diagnose = %+v, %v", rep, err)
			}
			after, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now())
			if err != nil || after.Corrupt {
				t.Fatalf("repair = %+v, %v", after, err)
			}
			if c := e.open().held(); c.Len() != 2 {
				t.Fatalf("cards after repair: %d", c.Len())
			}
			if c, _ := e.open().held().Card("A"); c.Status != StatusReady || c.ClaimOwner != "" {
				t.Fatalf("card A after repair = %+v", c)
			}
		})
	}
}

// A snapshot edited consistently (a plausible claim, re-checksummed) passes
// the checks on read, but doctor folds the archived events again and
// reports that no history produces it; repair rebuilds it.
func TestDoctorReportsForgedSnapshot(t *testing.T) {
	e := compacted(t)
	forgeCard(t, e.dir, "A", func(c map[string]any) {
		c["status"], c["claim_owner"], c["claim_epoch"], c["version"], c["attempts"] = "claimed", "attacker#7", 1, 2, 1
		c["claimed_at"], c["claim_ttl_seconds"] = "2026-01-02T03:04:05Z", 10*365*86400
		c["lease_expires_at"] = t0.Add(10 * 365 * 24 * time.Hour).Format(time.RFC3339Nano)
	})
	b := e.open()
	if c, _ := b.held().Card("A"); c.ClaimOwner != "attacker#7" {
		t.Fatalf("the forged snapshot should read (its fields are consistent): %+v", c)
	}
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil || !rep.Corrupt || len(rep.Damage) != 1 {
		t.Fatalf("diagnose = %+v, %v", rep, err)
	}
	d := rep.Damage[0]
	if d.Kind != "forged" || !d.Repairable || !strings.Contains(d.Reason, `card "A"`) || !strings.Contains(d.Reason, "attacker#7") {
		t.Fatalf("damage = %+v", d)
	}
	after, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now())
	if err != nil || after.Corrupt || len(after.Damage) != 0 {
		t.Fatalf("repair = %+v, %v", after, err)
	}
	b = e.open()
	if c, _ := b.held().Card("A"); c.Status != StatusReady || c.ClaimOwner != "" {
		t.Fatalf("card A after repair = %+v", c)
	}
	if _, err := b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w1", ID: "A"}); err != nil {
		t.Fatalf("claim after repair: %v", err)
	}
	// A snapshot bl wrote is clean.
	if _, err := b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := Diagnose(e.dir, e.clk.Now()); err != nil || rep.Corrupt || len(rep.Damage) != 0 {
		t.Fatalf("diagnose after compaction = %+v, %v", rep, err)
	}
}
