package gitsync

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// A remote named in config.json came with the clone: a teammate wrote it.
// It may name a remote only by the name of one of this clone's git remotes
// (its URL then comes from the clone's own .git/config) or by a network
// URL. A local path there would let a committed bare repository's hooks
// run on this machine when bl pushes to it (go-git's file transport runs
// the system git-receive-pack), so it is refused before any git work. A
// remote given on the command line is the user's own choice and may be a
// path.
//
// Credentials (BL_GIT_PASSWORD) go only over https, and only to the URL of
// a remote the user chose: a git remote of this clone, a URL given on the
// command line, or a tracked URL whose host is the host of one of this
// clone's git remotes.

// resolveRemote sets the URL of the remote name and whether it may be
// given credentials. tracked says name came from config.json.
func (s *Syncer) resolveRemote(name string, tracked bool) error {
	cfg, err := s.g.repo.Config()
	if err != nil {
		return err
	}
	if rc, ok := cfg.Remotes[name]; ok && len(rc.URLs) > 0 {
		s.url, s.remoteName = rc.URLs[0], name
		s.sendAuth = true
		return nil
	}
	if tracked {
		if !networkURL(name) {
			return ledger.Errorf(ledger.ErrInvalid, "config.json names the remote %q, which is not a git remote of this clone (see git remote -v) nor a network URL; a tracked file may name a remote only by a git remote's name or an https or ssh URL, never a local path, file:// or ext:: (those could run code the repository brought). Add the remote to this clone (git remote add NAME URL), or give a path on the command line with --remote", name)
		}
		s.url = name
		host := urlHost(name)
		for _, rc := range cfg.Remotes {
			for _, u := range rc.URLs {
				if host != "" && urlHost(u) == host {
					s.sendAuth = true
				}
			}
		}
		return nil
	}
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		abs, err := filepath.Abs(name)
		if err != nil {
			return err
		}
		s.url = abs
		return nil
	}
	if strings.Contains(name, "://") || strings.Contains(name, "@") {
		s.url, s.sendAuth = name, true
		return nil
	}
	return &RemoteError{Remote: name, Op: "fetch", Err: errors.New("no such remote in the git config, and not a URL or a directory")}
}

// networkURL reports whether u names a remote over the network: an
// https, http, ssh or git URL, or ssh's scp-like [user@]host:path.
func networkURL(u string) bool {
	if scheme, _, ok := strings.Cut(u, "://"); ok {
		switch strings.ToLower(scheme) {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
			h := urlHost(u)
			return h != "" && !strings.HasPrefix(h, "-")
		}
		return false
	}
	return scpHost(u) != ""
}

// scpHost is the host of an scp-like address ([user@]host:path), or "".
// As git does, a colon before any slash makes it scp-like, except for
// git's transport helpers (ext::cmd) and a drive letter (C:/repo); a host
// that begins with "-" could be read as an option and is refused.
func scpHost(u string) string {
	colon := strings.IndexByte(u, ':')
	if colon <= 1 || strings.Contains(u[:colon], "/") || strings.HasPrefix(u, "-") || strings.Contains(u, "::") {
		return ""
	}
	host := u[:colon]
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if host == "" || strings.HasPrefix(host, "-") || strings.ContainsAny(host, " \t\\") {
		return ""
	}
	return strings.ToLower(host)
}

// urlHost is the host (without port) a remote URL connects to, or "".
func urlHost(u string) string {
	if !strings.Contains(u, "://") {
		return scpHost(u)
	}
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToLower(p.Hostname())
}

// authAllowed reports whether credentials may go to the remote: https
// only, and only to a remote the user chose (resolveRemote).
func (s *Syncer) authAllowed() bool {
	return s.sendAuth && strings.HasPrefix(strings.ToLower(s.url), "https://")
}
