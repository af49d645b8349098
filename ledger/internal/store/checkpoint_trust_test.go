package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// ckBacklog is a compacted backlog with a ledger tail and a checkpoint of
// its first part, then more lines after it.
func ckBacklog(t *testing.T, dir string, seed uint64) *ckHistory {
	t.Helper()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	h := newCkHistory(seed)
	h.appendLines(t, dir, 80)
	compactHere(t, dir)
	h.appendLines(t, dir, 60)
	checkpointHere(t, dir)
	h.appendLines(t, dir, 10)
	return h
}

// reseal rewrites a checkpoint's body with edit applied and seals it
// again, checksums and all: a forgery only the binding to the files can
// refuse.
func reseal(t *testing.T, path string, edit func(body []byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	hdr, body := data[:checkpointHeaderLen], edit(append([]byte(nil), data[checkpointHeaderLen:]...))
	le.PutUint64(hdr[8+8*ckBodyLen:], uint64(len(body)))
	le.PutUint64(hdr[8+8*ckBodyCRC:], uint64(checkpointSum(0, body)))
	le.PutUint64(hdr[8+8*ckHeaderCRC:], uint64(checkpointSum(0, hdr[:checkpointHeaderLen-8])))
	if err := os.WriteFile(path, append(hdr, body...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// forgeTitle makes the checkpoint's cards read "forged" as their title.
func forgeTitle(t *testing.T, path string) {
	t.Helper()
	reseal(t, path, func(body []byte) []byte {
		var out []byte
		at := linesAt(mustRead(t, path))
		out = append(out, body[:at]...)
		for i, line := range bytes.SplitAfter(body[at:], []byte{'\n'}) {
			if len(line) == 0 {
				continue
			}
			raw, err := wire.CheckFrame(line)
			if err != nil {
				t.Fatal(err)
			}
			if l, err := wire.ReadSnapshotLine(raw); err == nil && i > 0 && l.Card != nil {
				l.Card.Title = "forged"
				if line, err = wire.EncodeFramed(l); err != nil {
					t.Fatal(err)
				}
			}
			out = append(out, line...)
		}
		return out
	})
}

// linesAt is where a checkpoint's framed lines start in its body: after
// the event id hashes and the card keys.
func linesAt(data []byte) int {
	le := binary.LittleEndian
	return 8*int(le.Uint64(data[8+8*ckIDs:])) + cardKeyLen*int(le.Uint64(data[8+8*ckCards:]))
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func hasForged(d ckDump) bool {
	for _, c := range d.Cards {
		if c.Title == "forged" {
			return true
		}
	}
	return false
}

// TestCheckpointDamageIgnored is the negative control: a checkpoint
// damaged or not matching the files is detected and the tail folded as
// without it, with the same answers. And the equivalence check has
// teeth: a forged checkpoint that still names these very files changes
// the answers, which is why every load checks the binding.
func TestCheckpointDamageIgnored(t *testing.T) {
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		damage func(t *testing.T, dir, path string)
	}{
		{"body byte flipped", func(t *testing.T, dir, path string) {
			data := mustRead(t, path)
			data[len(data)-20] ^= 1
			os.WriteFile(path, data, 0o644)
		}},
		{"header byte flipped", func(t *testing.T, dir, path string) {
			data := mustRead(t, path)
			data[8+8*ckOffset] ^= 1
			os.WriteFile(path, data, 0o644)
		}},
		{"torn", func(t *testing.T, dir, path string) {
			data := mustRead(t, path)
			os.WriteFile(path, data[:len(data)/2], 0o644)
		}},
		{"empty", func(t *testing.T, dir, path string) { os.WriteFile(path, nil, 0o644) }},
		{"garbage", func(t *testing.T, dir, path string) {
			os.WriteFile(path, bytes.Repeat([]byte("bltail04\x00\xff"), 100), 0o644)
		}},
		{"other version", func(t *testing.T, dir, path string) {
			data := mustRead(t, path)
			copy(data, "bltail99")
			os.WriteFile(path, data, 0o644)
		}},
		{"symlink to a fifo", func(t *testing.T, dir, path string) {
			fifo := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skip(err)
			}
			os.Remove(path)
			os.Symlink(fifo, path)
		}},
		{"ledger prefix rewritten in place", func(t *testing.T, dir, path string) {
			f, err := os.OpenFile(filepath.Join(dir, LedgerFile), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// Same length, same inode, a valid line: the first event
			// by another actor.
			first, _, _ := bytes.Cut(mustRead(t, filepath.Join(dir, LedgerFile)), []byte{'\n'})
			e, err := wire.DecodeLine(append(first, '\n'))
			if err != nil {
				t.Fatal(err)
			}
			e.Actor = "b"
			line, err := wire.EncodeLine(e)
			if err != nil || len(line) != len(first)+1 {
				t.Fatalf("re-encoded: %q %v", line, err)
			}
			f.WriteAt(line, 0)
		}},
		{"ledger replaced by a copy", func(t *testing.T, dir, path string) {
			p := filepath.Join(dir, LedgerFile)
			data := mustRead(t, p)
			os.WriteFile(p+".new", data, 0o644)
			os.Rename(p+".new", p)
		}},
		{"snapshot touched", func(t *testing.T, dir, path string) {
			p := filepath.Join(dir, SnapshotFile)
			at := time.Now().Add(time.Hour)
			os.Chtimes(p, at, at)
		}},
		{"forged, resealed", forgeAndExpect},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ckBacklog(t, dir, 3)
			path := filepath.Join(dir, CacheDir, CheckpointFile)
			if _, via := dumpStore(t, dir, now); !via {
				t.Fatal("the checkpoint was not used before the damage")
			}
			tc.damage(t, dir, path)
			if tc.name == "forged, resealed" {
				return
			}
			got, via := dumpStore(t, dir, now)
			if via {
				t.Fatal("a damaged or foreign checkpoint was used")
			}
			os.Remove(path)
			want, _ := dumpStore(t, dir, now)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("answers differ:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// forgeAndExpect shows what the binding guards against: a forged
// checkpoint that names the right files is believed.
func forgeAndExpect(t *testing.T, dir, path string) {
	forgeTitle(t, path)
	d, via := dumpStore(t, dir, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	if !via || !hasForged(d) {
		t.Fatal("the equivalence check would not notice a wrong checkpoint")
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestCheckpointForceAddedNotTrusted: a teammate force-adds a checkpoint
// (here a forged one, sealed with valid checksums) under cache/ and pushes
// it; a clone that pulls it never uses it, and answers as the files say.
func TestCheckpointForceAddedNotTrusted(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	work, bare, clone := filepath.Join(root, "work"), filepath.Join(root, "remote.git"), filepath.Join(root, "clone")
	git(t, root, "init", "-q", "--bare", bare)
	git(t, root, "init", "-q", "-b", "main", work)
	dir := filepath.Join(work, ".backlog")
	ckBacklog(t, dir, 11)
	path := filepath.Join(dir, CacheDir, CheckpointFile)
	forgeTitle(t, path)
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	if d, via := dumpStore(t, dir, now); !via || !hasForged(d) {
		t.Fatal("the forged checkpoint does not bind to the files it was made for")
	}
	git(t, work, "add", "-A")
	git(t, work, "add", "-f", ".backlog/cache/"+CheckpointFile)
	git(t, work, "commit", "-qm", "backlog")
	git(t, work, "push", "-q", bare, "main")
	git(t, root, "clone", "-q", "-b", "main", bare, clone)
	cdir := filepath.Join(clone, ".backlog")
	if _, err := os.Stat(filepath.Join(cdir, CacheDir, CheckpointFile)); err != nil {
		t.Fatalf("the clone did not get the checkpoint: %v", err)
	}
	got, via := dumpStore(t, cdir, now)
	if via || hasForged(got) {
		t.Fatalf("the clone used the pushed checkpoint (used %v, forged cards %v)", via, hasForged(got))
	}
	os.Remove(filepath.Join(cdir, CacheDir, CheckpointFile))
	want, _ := dumpStore(t, cdir, now)
	got.IDs, want.IDs = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the clone's answers differ with the pushed checkpoint:\n got %+v\nwant %+v", got, want)
	}
}

// TestCheckpointKill9: a writer that rewrites the checkpoint at every
// append is killed with SIGKILL at random points; whatever it leaves (the
// old checkpoint, the new one, none, a temp file) gives the answers the
// files give.
func TestCheckpointKill9(t *testing.T) {
	if os.Getenv("BL_CKPT_WRITER") != "" {
		ckWriter(t, os.Getenv("BL_CKPT_WRITER"))
		return
	}
	dir := t.TempDir()
	ckBacklog(t, dir, 5)
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	rounds := 8
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointKill9$")
		cmd.Env = append(os.Environ(), "BL_CKPT_WRITER="+dir, "BL_CKPT_SEED="+strconv.Itoa(round))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let it write a few checkpoints first, counted from its output,
		// so a slow machine still gets some in before the kill.
		var wrote atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if n, ok := strings.CutPrefix(sc.Text(), "wrote "); ok {
					k, _ := strconv.Atoi(n)
					wrote.Store(int64(k))
				}
			}
		}()
		deadline := time.Now().Add(20 * time.Second)
		for wrote.Load() < int64(3+round) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(round) * time.Millisecond)
		cmd.Process.Kill()
		<-done
		cmd.Wait()
		if wrote.Load() == 0 {
			t.Fatal("the writer wrote nothing")
		}
		got, _ := dumpStore(t, dir, now)
		path := filepath.Join(dir, CacheDir, CheckpointFile)
		aside := path + ".aside"
		os.Rename(path, aside)
		want, _ := dumpStore(t, dir, now)
		os.Rename(aside, path)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: answers after kill -9 differ:\n got %+v\nwant %+v", round, got, want)
		}
	}
	// The next checkpoint a writer makes takes away the temp files the
	// killed ones left.
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := writeCheckpoint(dir, b.snapInfo, b.state, &b.pos); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, CacheDir, ".*.tmp-*")); len(left) > 0 {
		t.Fatalf("temp files left: %v", left)
	}
}

// ckWriter appends notes and creates through the store, a checkpoint
// after every append, until it is killed.
func ckWriter(t *testing.T, dir string) {
	seed, _ := strconv.Atoi(os.Getenv("BL_CKPT_SEED"))
	CheckpointEvery = 1
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; ; i++ {
		e := &wire.Event{V: 2, ID: fmt.Sprintf("kw%d-%d", seed, i), At: time.Now().UTC(), Actor: "k", Op: wire.OpNote, Card: fmt.Sprintf("K%03d", i%7), Text: "n"}
		if i%3 == 0 {
			title := "made by the writer"
			e.V, e.Op, e.Card, e.Text, e.Fields = 1, wire.OpCreate, fmt.Sprintf("W%d-%d", seed, i), "", &wire.Fields{Title: &title}
		}
		line, d, err := WrittenLine(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.withLock(t.Context(), func() error {
			if b.state.Check(d) != nil {
				return nil
			}
			_, err := b.Append(t.Context(), []*wire.Event{d}, line)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("wrote %d\n", i)
	}
}

// TestCheckpointResealedGarbageNoPanic: a checkpoint whose fields or body
// bytes are changed and its checksums made to hold again (only someone on
// this machine could write one that binds) never makes a load panic or
// fail: whatever does not read is ignored.
func TestCheckpointResealedGarbageNoPanic(t *testing.T) {
	dir := t.TempDir()
	ckBacklog(t, dir, 9)
	path := filepath.Join(dir, CacheDir, CheckpointFile)
	orig := mustRead(t, path)
	r := newCkHistory(1).r
	for i := range 200 {
		data := append([]byte(nil), orig...)
		if i%2 == 0 {
			f := r.IntN(ckHeaderCRC)
			if f == ckBodyLen || f == ckBodyCRC {
				f = ckOffset
			}
			vals := []uint64{0, 1, 1 << 63, ^uint64(0), uint64(r.Int64())}
			binary.LittleEndian.PutUint64(data[8+8*f:], vals[r.IntN(len(vals))])
		} else {
			k := checkpointHeaderLen + r.IntN(len(data)-checkpointHeaderLen)
			data[k] = byte(r.IntN(256))
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		reseal(t, path, func(body []byte) []byte { return body })
		b, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		b.Close()
	}
}
