package store

import (
	"errors"
	"testing"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

func TestOpenRefusesNetworkFS(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	saved := fsType
	t.Cleanup(func() { fsType = saved })
	for magic, name := range networkFS {
		fsType = func(string) (int64, error) { return magic, nil }
		if _, err := Open(dir, Options{}); !errors.Is(err, wire.ErrNetworkFS) {
			t.Errorf("%s: Open error = %v, want ErrNetworkFS", name, err)
		}
		if _, err := Open(dir, Options{AllowNetworkFS: true}); err != nil {
			t.Errorf("%s with AllowNetworkFS: %v", name, err)
		}
	}
	fsType = func(string) (int64, error) { return 0xef53, nil } // ext4
	if _, err := Open(dir, Options{}); err != nil {
		t.Errorf("ext4: %v", err)
	}
}
