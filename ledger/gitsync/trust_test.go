package gitsync

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

// TestTrackedRemoteIsNeverAPath: a remote named by config.json that is a
// directory the clone brought (a committed bare repository with a hook) is
// refused before any git work, so its hook never runs; file:// and ext::
// too. The same path given on the command line is the user's choice.
func TestTrackedRemoteIsNeverAPath(t *testing.T) {
	w := newWorld(t)
	dir := w.clone("a")
	tools := filepath.Join(dir, "tools.git")
	w.git(dir, "init", "-q", "--bare", tools)
	ran := filepath.Join(w.root, "hook-ran")
	hook := "#!/bin/sh\ntouch " + ran + "\nexit 0\n"
	if err := os.WriteFile(filepath.Join(tools, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	b := open(t, dir)
	defer b.Close()
	create(t, b, "tester", "A1")
	t.Chdir(dir)
	for _, remote := range []string{"tools.git", "./tools.git", tools, "file://" + tools, "ext::sh -c touch% " + ran, "-oProxyCommand=x:y", "origin2"} {
		_, err := New(b, Options{Remote: remote, RemoteTracked: true, Actor: "tester"})
		if !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("tracked remote %q: %v, want ErrInvalid", remote, err)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the committed hook ran")
	}
	// The user's own choice on the command line still works.
	s := syncer(t, b, Options{Remote: "tools.git"})
	if _, err := s.Push(context.Background(), Hooks{}); err != nil {
		t.Fatalf("push to a path given on the command line: %v", err)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("a path the user named is an ordinary remote, hooks and all: %v", err)
	}
	// A git remote of this clone named in config.json resolves through
	// .git/config.
	if _, err := New(b, Options{Remote: "origin", RemoteTracked: true, Actor: "tester"}); err != nil {
		t.Fatalf("tracked origin: %v", err)
	}
}

// TestCredentialsGoOnlyWhereTheUserSaid: BL_GIT_PASSWORD is sent to no
// URL a tracked file named unless its host is one of this clone's
// remotes, and never over plain http.
func TestCredentialsGoOnlyWhereTheUserSaid(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
		http.Error(w, "who are you", http.StatusUnauthorized)
	}))
	defer srv.Close()
	t.Setenv("BL_GIT_PASSWORD", "s3cret")
	w := newWorld(t)
	dir := w.clone("a")
	b := open(t, dir)
	defer b.Close()
	create(t, b, "tester", "A1")
	for _, tracked := range []bool{true, false} {
		s := syncer(t, b, Options{Remote: srv.URL + "/team.git", RemoteTracked: tracked})
		if _, err := s.Push(context.Background(), Hooks{}); err == nil {
			t.Fatal("push to a server that refuses everyone succeeded")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) == 0 {
		t.Fatal("the server saw no request")
	}
	for _, a := range auths {
		if a != "" {
			t.Fatalf("credentials sent over plain http: %q", a)
		}
	}

	// https: only to a host of this clone's own remotes.
	w.git(dir, "remote", "add", "forge", "https://git.example.com/team/backlog.git")
	for _, c := range []struct {
		url     string
		tracked bool
		want    bool
	}{
		{"https://evil.example.net/x.git", true, false},
		{"https://git.example.com/other/x.git", true, true},
		{"https://evil.example.net/x.git", false, true},
		{"http://git.example.com/team/backlog.git", true, false},
		{"forge", true, true},
	} {
		s := syncer(t, b, Options{Remote: c.url, RemoteTracked: c.tracked})
		if got := s.auth() != nil; got != c.want {
			t.Errorf("%s (tracked %v): credentials %v, want %v", c.url, c.tracked, got, c.want)
		}
	}
}

func TestNetworkURL(t *testing.T) {
	for u, want := range map[string]bool{
		"https://github.com/o/r.git":  true,
		"ssh://git@github.com/o/r":    true,
		"git@github.com:o/r.git":      true,
		"github.com:o/r.git":          true,
		"http://127.0.0.1:8080/r.git": true,
		"file:///tmp/r.git":           false,
		"ext::sh -c id":               false,
		"tools.git":                   false,
		"./tools.git":                 false,
		"/abs/path.git":               false,
		"../up.git":                   false,
		"C:/repo.git":                 false, // a drive letter
		"x::y:z":                      false,
		"-oProxyCommand=id:x":         false,
		"ssh://-oProxyCommand=id/x":   false,
		"":                            false,
	} {
		if got := networkURL(u); got != want {
			t.Errorf("networkURL(%q) = %v, want %v", u, got, want)
		}
	}
}
