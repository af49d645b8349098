package gitdir

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzObjects feeds damaged packs, loose objects and deltas to the
// in-process store: it must answer every id with the object's true bytes
// or an error, never panic, never hang, never allocate past its caps.
// The seeds are a real repository's pack and objects.
func FuzzObjects(f *testing.F) {
	repo, git := storeRepo(f, "sha1")
	git(repo, "gc", "-q")
	_, commonDir, err := Dirs(repo)
	if err != nil {
		f.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(commonDir, "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		f.Fatalf("%d packs", len(packs))
	}
	pack, err := os.ReadFile(packs[0])
	if err != nil {
		f.Fatal(err)
	}
	idx, err := os.ReadFile(packs[0][:len(packs[0])-len(".pack")] + ".idx")
	if err != nil {
		f.Fatal(err)
	}
	var ids []string
	for id := range allObjects(f, repo) {
		ids = append(ids, id)
	}
	f.Add(pack, idx, uint16(0))
	f.Add(pack[:len(pack)/2], idx, uint16(7))
	f.Add([]byte("x\x9c\x01\x00"), []byte{}, uint16(3))
	f.Fuzz(func(t *testing.T, packData, idxData []byte, pick uint16) {
		dir := t.TempDir()
		objects := filepath.Join(dir, "objects")
		if err := os.MkdirAll(filepath.Join(objects, "pack"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n"), 0o644)
		os.WriteFile(filepath.Join(objects, "pack", "pack-x.pack"), packData, 0o644)
		os.WriteFile(filepath.Join(objects, "pack", "pack-x.idx"), idxData, 0o644)
		id := ids[int(pick)%len(ids)]
		// The same bytes as a loose object of another id.
		loose := ids[(int(pick)+1)%len(ids)]
		os.MkdirAll(filepath.Join(objects, loose[:2]), 0o755)
		os.WriteFile(filepath.Join(objects, loose[:2], loose[2:]), packData, 0o644)
		s, err := OpenStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.MaxSize = 1 << 20
		defer s.Close()
		for _, x := range []string{id, loose} {
			if _, data, err := s.Read(x); err == nil && int64(len(data)) > s.MaxSize {
				t.Fatalf("read %d bytes past the cap", len(data))
			}
			s.Size(x)
		}
		base := packData[:len(packData)/2]
		applyDelta(base, idxData, 1<<20)
	})
}
