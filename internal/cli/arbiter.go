package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger"
)

// A claim arbiter decides the owner commands for clones on several
// machines: a NATS JetStream server (docs/SYNC.md, "A claim arbiter").
// It is chosen by --arbiter, else BL_ARBITER, else the local, untracked
// .backlog/arbiter.json: never by a tracked file, since whoever names the
// arbiter sees every claim and decides who gets which card. The client is
// linked by bl-git only; the lean bl hands the command over, as it does
// for a git remote.

// ArbiterEnv names the arbiter in the environment.
const ArbiterEnv = "BL_ARBITER"

// ArbiterFile is the local setting: {"url": "nats://HOST:PORT", "creds":
// FILE, "nkey": FILE, "ca": FILE, "cert": FILE, "key": FILE}.
const ArbiterFile = "arbiter.json"

// exitArbiter: the arbiter could not be reached; nothing was written.
const exitArbiter = 7

// ArbiterSettings say which arbiter and how to reach it: the URL and the
// credentials nats.go takes (a creds file, an NKey seed file, TLS files).
type ArbiterSettings struct {
	URL   string `json:"url"`
	Creds string `json:"creds,omitempty"`
	NKey  string `json:"nkey,omitempty"`
	CA    string `json:"ca,omitempty"`
	Cert  string `json:"cert,omitempty"`
	Key   string `json:"key,omitempty"`
}

// Arbiter is the client side of a claim arbiter (package arbiter, in
// bl-git). Its writes are acknowledged once the arbiter took them, and
// then appended to the clone's ledger.
type Arbiter interface {
	Claim(ctx context.Context, b *ledger.Backlog, s ArbiterSettings, req ledger.ClaimRequest) (*ledger.Card, error)
	// ClaimReview takes a review lease (bl claim --review).
	ClaimReview(ctx context.Context, b *ledger.Backlog, s ArbiterSettings, req ledger.ClaimRequest) (*ledger.Card, error)
	// ClaimWait claims, waiting up to wait for a card to become
	// claimable; the arbiter's decisions wake it (a KV watch).
	ClaimWait(ctx context.Context, b *ledger.Backlog, s ArbiterSettings, req ledger.ClaimRequest, wait time.Duration) (*ledger.Card, error)
	// Follow takes every decision the arbiter makes into b as it happens,
	// until stop is called or ctx ends; lost is called once if the
	// arbiter is lost after it started.
	Follow(ctx context.Context, b *ledger.Backlog, s ArbiterSettings, lost func(error)) (stop func(), err error)
	// Lease runs the lease write do on card.
	Lease(ctx context.Context, b *ledger.Backlog, s ArbiterSettings, card, requestID string, do func(ctx context.Context, rid string) (ledger.Card, error)) (ledger.Card, error)
}

// ArbiterDown is implemented by the error of an arbiter that could not be
// reached: exit code 7, --json code "arbiter".
type ArbiterDown interface{ ArbiterDown() bool }

// arbiterSettings is the arbiter chosen for rc, or a zero URL for none:
// --arbiter, else BL_ARBITER (credentials in BL_ARBITER_CREDS,
// BL_ARBITER_NKEY, BL_ARBITER_CA, BL_ARBITER_CERT, BL_ARBITER_KEY), else
// .backlog/arbiter.json. --local and --remote choose none.
func (a *App) arbiterSettings(rc remoteChoice) (ArbiterSettings, error) {
	if rc.Local || rc.Remote != "" {
		return ArbiterSettings{}, nil
	}
	env := ArbiterSettings{URL: firstOf(rc.Arbiter, a.getenv(ArbiterEnv)), Creds: a.getenv("BL_ARBITER_CREDS"), NKey: a.getenv("BL_ARBITER_NKEY"),
		CA: a.getenv("BL_ARBITER_CA"), Cert: a.getenv("BL_ARBITER_CERT"), Key: a.getenv("BL_ARBITER_KEY")}
	if env.URL != "" {
		return env, nil
	}
	dir, err := a.findDir()
	if err != nil {
		return ArbiterSettings{}, nil // the command reports it
	}
	return a.localArbiter(dir)
}

// readArbiterFile reads the local setting; a tracked or linked one is
// refused: git would hand every clone the same arbiter, and its
// credentials.
func readArbiterFile(ctx context.Context, dir string) (ArbiterSettings, error) {
	path := filepath.Join(dir, ArbiterFile)
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return ArbiterSettings{}, nil
	}
	if err != nil {
		return ArbiterSettings{}, err
	}
	if !fi.Mode().IsRegular() {
		return ArbiterSettings{}, ledger.Errorf(ledger.ErrInvalid, "%s is not a regular file; bl reads the arbiter setting only from a local file", path)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if tracked, err := gitdir.Tracked(ctx, dir, ArbiterFile); err == nil && tracked {
		return ArbiterSettings{}, ledger.Errorf(ledger.ErrInvalid, "%s is tracked by git: the arbiter decides every claim and its file may hold credentials, so bl takes it only from a local file; untrack it (git rm --cached) or use BL_ARBITER", path)
	}
	data, err := fsutil.ReadRegularMax(path, ledger.MaxConfigBytes)
	var special *fsutil.NotRegularError
	var large *fsutil.TooLargeError
	if errors.As(err, &special) || errors.As(err, &large) {
		return ArbiterSettings{}, ledger.Errorf(ledger.ErrInvalid, "%v; bl reads the arbiter setting only from a local file", err)
	}
	if err != nil {
		return ArbiterSettings{}, err
	}
	var s ArbiterSettings
	if err := json.Unmarshal(data, &s); err != nil || s.URL == "" {
		return ArbiterSettings{}, ledger.Errorf(ledger.ErrInvalid, "%s: want {\"url\": \"nats://HOST:PORT\"} (%v)", path, err)
	}
	return s, nil
}

// throughArbiter returns the arbiter the owner command cmd goes through,
// or nil. In the lean bl there is none: gitWork handed the command over.
func (a *App) throughArbiter(cmd string, rc remoteChoice) (Arbiter, ArbiterSettings, error) {
	if err := rc.check(); err != nil {
		return nil, ArbiterSettings{}, err
	}
	s, err := a.arbiterSettings(rc)
	if err != nil || s.URL == "" {
		return nil, s, err
	}
	if a.ext.Arbiter == nil {
		return nil, s, a.handover(arbiterWhat(cmd, s.URL))
	}
	return a.ext.Arbiter, s, nil
}

func arbiterWhat(cmd, url string) string {
	return fmt.Sprintf("bl %s through the claim arbiter %s", cmd, url)
}

// arbiterWork is gitWork for a command that goes through an arbiter when
// one is set (the review verdicts): the lean bl hands it over.
func (a *App) arbiterWork(cmd string) string {
	if s, err := a.arbiterSettings(remoteChoice{}); err != nil || s.URL != "" {
		a.relayable = err == nil
		return arbiterWhat(cmd, s.URL)
	}
	return ""
}
