package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/repair"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// t0 is the fake clock's starting time in every test.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeClock is a settable clock shared by any number of Backlog handles.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration // added after every read, to let time pass by itself
}

func newClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// env is one backlog directory with a handle on a fake clock.
type env struct {
	t   testing.TB
	dir string
	clk *fakeClock
	b   *Backlog
	ctx context.Context
}

var m = Mutation{Actor: "tester"}

// rid returns a mutation carrying a request id.
func rid(id string) Mutation { return Mutation{Actor: "tester", RequestID: id} }

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, clk: newClock(), ctx: context.Background()}
	e.b = e.open()
	return e
}

// open returns a new handle on the env's directory sharing its clock.
func (e *env) open() *Backlog {
	e.t.Helper()
	b, err := Open(e.dir, Options{Clock: e.clk.Now, LockTimeout: 5 * time.Second})
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	return b
}

func (e *env) ledgerPath() string { return filepath.Join(e.dir, LedgerFile) }

// bytes returns the ledger file's content.
func (e *env) bytes() []byte {
	e.t.Helper()
	data, err := os.ReadFile(e.ledgerPath())
	if err != nil {
		e.t.Fatal(err)
	}
	return data
}

// writeLedger replaces the ledger file's content in place.
func (e *env) writeLedger(data []byte) {
	e.t.Helper()
	if err := os.WriteFile(e.ledgerPath(), data, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// appendRaw appends bytes to the ledger as a crashed or foreign writer would.
func (e *env) appendRaw(data []byte) {
	e.t.Helper()
	f, err := os.OpenFile(e.ledgerPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		e.t.Fatal(err)
	}
}

// lines returns the ledger's lines, newline included.
func (e *env) lines() [][]byte {
	return splitLines(e.bytes())
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, data)
			break
		}
		out = append(out, data[:i+1])
		data = data[i+1:]
	}
	return out
}

// events decodes every line of the ledger.
func (e *env) events() []*Event {
	e.t.Helper()
	return readEvents(e.t, e.ledgerPath())
}

func (e *env) lastEvent() *Event {
	e.t.Helper()
	evs := e.events()
	if len(evs) == 0 {
		e.t.Fatal("ledger is empty")
	}
	return evs[len(evs)-1]
}

func (e *env) create(id string, mod ...func(*CreateRequest)) Card {
	e.t.Helper()
	r := CreateRequest{Mutation: m, ID: id, Title: "card " + id}
	for _, f := range mod {
		f(&r)
	}
	c, created, err := e.b.Create(e.ctx, r)
	if err != nil || !created {
		e.t.Fatalf("create %s: created=%v err=%v", id, created, err)
	}
	return c
}

func (e *env) claim(id, owner string, ttl time.Duration) *Card {
	e.t.Helper()
	c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: id, Owner: owner, TTL: ttl})
	if err != nil || c == nil {
		e.t.Fatalf("claim %s by %s: %+v, %v", id, owner, c, err)
	}
	return c
}

func (e *env) card(id string) Card {
	e.t.Helper()
	c, err := e.b.Get(id)
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return c
}

// unchanged runs fn and fails unless it returns an error matching want and
// the ledger file is byte for byte the same afterwards.
func (e *env) unchanged(want error, fn func(*env) error) error {
	e.t.Helper()
	before := e.bytes()
	err := fn(e)
	if !errors.Is(err, want) {
		e.t.Fatalf("err = %v, want %v", err, want)
	}
	if after := e.bytes(); !bytes.Equal(before, after) {
		e.t.Fatalf("ledger changed by a refused request:\nbefore %d bytes\nafter  %d bytes\n%s", len(before), len(after), after[len(before):])
	}
	return err
}

// appendsOne runs fn and fails unless it succeeds and appends exactly one
// line holding an event of the given op.
func (e *env) appendsOne(op Op, fn func(*env) error) *Event {
	e.t.Helper()
	before := e.lines()
	if err := fn(e); err != nil {
		e.t.Fatalf("%s: %v", op, err)
	}
	after := e.lines()
	if len(after) != len(before)+1 {
		e.t.Fatalf("%s appended %d lines, want 1", op, len(after)-len(before))
	}
	ev, err := DecodeLine(after[len(after)-1])
	if err != nil {
		e.t.Fatal(err)
	}
	if ev.Op != op {
		e.t.Fatalf("appended op %s, want %s", ev.Op, op)
	}
	return ev
}

// stateJSON renders every card of s in id order, the way two folds are
// compared.
func stateJSON(t testing.TB, s *fold.State) string {
	t.Helper()
	cards := s.List(Filter{}, t0, SortID)
	data, err := json.Marshal(cards)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// readEvents decodes every line of a ledger file.
func readEvents(t testing.TB, path string) []*Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*Event
	for i, l := range splitLines(data) {
		ev, err := DecodeLine(l)
		if err != nil {
			t.Fatalf("%s line %d: %v", path, i+1, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// foldFile decodes a ledger file completely and folds it.
func foldFile(t testing.TB, path string) *fold.State {
	t.Helper()
	return fold.Fold(readEvents(t, path))
}

// historyEvents reads every event of a backlog: the archive segments in
// order, then the ledger.
func historyEvents(t testing.TB, dir string) []*Event {
	t.Helper()
	names, err := store.ArchiveNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var evs []*Event
	for _, n := range names {
		evs = append(evs, readEvents(t, filepath.Join(dir, n))...)
	}
	return append(evs, readEvents(t, filepath.Join(dir, LedgerFile))...)
}

// foldHistory folds every event of a backlog.
func foldHistory(t testing.TB, dir string) *fold.State {
	t.Helper()
	return fold.Fold(historyEvents(t, dir))
}

func intp(v int) *int            { return &v }
func strp(v string) *string      { return &v }
func strs(v ...string) *[]string { return &v }

// isRule reports whether err is a validation failure, which the fold
// records as a conflict, rather than IO or damage.
func isRule(err error) bool {
	var r *wire.RuleError
	return errors.As(err, &r)
}

// cardMap is every card s holds in memory, by id.
func cardMap(s *fold.State) map[string]*Card {
	m := map[string]*Card{}
	s.Range(func(c *Card) bool { m[c.ID] = c; return true })
	return m
}

// receiptMap is every receipt s holds in memory, by request id.
func receiptMap(s *fold.State) map[string]Receipt {
	m := map[string]Receipt{}
	s.RangeReceipts(func(rid string, r Receipt) bool { m[rid] = r; return true })
	return m
}

// crc32c is a bit-at-a-time CRC-32C (Castagnoli, reflected polynomial
// 0x82F63B78), written out so the framing check does not lean on the code
// under test.
func crc32c(data []byte) uint32 {
	crc := ^uint32(0)
	for _, b := range data {
		crc ^= uint32(b)
		for i := 0; i < 8; i++ {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82F63B78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

// frame turns a JSON object into a ledger line with a correct checksum.
func frame(obj string) []byte {
	return []byte(fmt.Sprintf(`%s,"crc":"%08x"}`+"\n", obj[:len(obj)-1], crc32c([]byte(obj))))
}

// removeIndex drops the cached index, so the next load reads the snapshot
// whole and writes a new one.
func removeIndex(dir string) {
	_ = os.Remove(filepath.Join(dir, CacheDir, IndexFile))
}

// rebase puts the events only local has after upstream's history: the
// result is upstream's files with those events appended to its ledger,
// re-stamped where needed so (at, id) order puts them after everything
// upstream holds. Upstream's history is never reordered, so whatever a
// remote accepted first stays first: a local claim that raced a claim
// upstream already holds folds as a recorded conflict and changes nothing.
// Local files upstream lacks (config.json, .gitignore, .gitattributes)
// are kept. (The store applies it through ApplyUpstream; the tests call it
// on trees directly.)
func rebase(upstream, local Tree) (Tree, RebaseResult, error) {
	out, res, err := rebaseOnto(upstream, local, nil)
	if err != nil {
		return nil, res, err
	}
	s, err := out.fold(true)
	if err != nil {
		return nil, res, err
	}
	res.Conflicts = s.NumConflicts()
	return out, res, nil
}

// held is the state b last read or wrote (tests look at it after the call).
func (b *Backlog) held() (s *fold.State) {
	_ = b.st.Current(func(st *fold.State, _ time.Time) error { s = st; return nil })
	return s
}

// compactions is how many compactions the state b holds started from.
func (b *Backlog) compactions() (n int) {
	_ = b.st.Current(func(*fold.State, time.Time) error { _, _, n, _ = b.st.Counts(); return nil })
	return n
}

// fold folds t as Fold does (mayNormalize), or as a tree already in its
// normal form.
func (t Tree) fold(mayNormalize bool) (*fold.State, error) {
	if mayNormalize {
		return store.Tree(t).Fold()
	}
	return store.Tree(t).FoldNormal()
}

// archives lists t's archive segments, oldest first.
func (t Tree) archives() []string { return store.Tree(t).Archives() }

// foldWith folds t as FoldWith does.
func (t Tree) foldWith(load Loader) (*fold.State, error) { return store.Tree(t).FoldWith(load) }

// rebaseOnto is repair.RebaseOnto on the API's trees.
func rebaseOnto(upstream, local Tree, load Loader) (Tree, RebaseResult, error) {
	out, res, err := repair.RebaseOnto(store.Tree(upstream), store.Tree(local), load)
	return Tree(out), res, err
}
