// Package arbiter decides claims on a NATS JetStream key-value bucket
// shared by clones on several machines: each card has one key, whose value
// is the card's lease events (claim, heartbeat, release, complete, block,
// fail, submit) as ledger lines, in the order the arbiter accepted them. A
// lease write reads the key, takes in the lines its clone lacks
// (ledger.Backlog.Absorb), stages its own event against that fold, and
// makes it count with a compare-and-swap on the key's revision: the key
// takes the event only if nobody wrote it since it was read. Only then is
// the event appended to the clone's ledger, so bl sync carries it like any
// other. The revision is the fencing token: an owner whose lease another
// clone took over finds that clone's claim in the value, folds it, and is
// refused (ledger.ErrFenced) before it writes anything; the epochs in the
// ledger lines are those the arbiter's order gives.
//
// Only bl-git links this package (the network client stays out of the
// lean bl, which hands the command over).
package arbiter

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bl-backlog/bl/ledger"
)

// Settings say which arbiter and how to reach it.
type Settings struct {
	// URL is nats://HOST:PORT (tls:// for TLS), with an optional path
	// naming the bucket (default DefaultBucket) and an optional
	// ?replicas=N for the bucket's first creation.
	URL string
	// Creds is a NATS credentials file (JWT and NKey seed); NKey a file
	// holding an NKey seed. CA, Cert and Key are PEM files for TLS.
	Creds, NKey, CA, Cert, Key string
	// Timeout bounds each request to the server (default DefaultTimeout).
	Timeout time.Duration
}

// DefaultBucket is the KV bucket when the URL names none.
const DefaultBucket = "bl"

// DefaultTimeout bounds each request to the server.
const DefaultTimeout = 3 * time.Second

// UnreachableError is an arbiter that could not be reached, or that did
// not answer a request in time. Nothing was written to the backlog; when
// Unsure, a write may have reached the arbiter before the answer was lost.
type UnreachableError struct {
	URL    string
	Op     string
	Unsure bool // a compare-and-swap was sent, and no answer came back
	Err    error
}

func (e *UnreachableError) Error() string {
	if e.Unsure {
		return fmt.Sprintf("arbiter %s: %s sent, no answer (%v); it may have landed: retry with the same --request-id to find out", e.URL, e.Op, e.Err)
	}
	return fmt.Sprintf("arbiter %s unreachable (%s: %v); nothing was written", e.URL, e.Op, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Arbiter is a connection to one arbiter's bucket.
type Arbiter struct {
	s       Settings
	url     string // for messages, without credentials
	nc      *nats.Conn
	kv      jetstream.KeyValue
	timeout time.Duration
	// Rounds bounds the compare-and-swap rounds of one call.
	Rounds int

	mu       sync.Mutex
	busy     map[string]int           // cards calls of this process are claiming (pick)
	requests map[string]chan struct{} // request ids of calls under way (oneAtATime)
}

var bucketName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// parse splits the URL into the servers nats.go dials (a comma-separated
// list names several members of one cluster), the bucket and the replicas,
// both taken from the first.
func parse(raw string) (servers []string, bucket string, replicas int, err error) {
	raw, shown := strings.TrimSpace(raw), redactURL(raw)
	for i, one := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" {
			return nil, "", 0, ledger.Errorf(ledger.ErrInvalid, "arbiter %q is not a URL such as nats://127.0.0.1:4222", shown)
		}
		switch u.Scheme {
		case "nats", "tls":
		default:
			return nil, "", 0, ledger.Errorf(ledger.ErrInvalid, "arbiter %q: the scheme must be nats:// or tls://", shown)
		}
		if i == 0 {
			bucket = strings.Trim(u.Path, "/")
			if bucket == "" {
				bucket = DefaultBucket
			}
			if !bucketName.MatchString(bucket) {
				return nil, "", 0, ledger.Errorf(ledger.ErrInvalid, "arbiter %q: the bucket %q must be letters, digits, _ and -", shown, bucket)
			}
			replicas = 1
			if r := u.Query().Get("replicas"); r != "" {
				if replicas, err = strconv.Atoi(r); err != nil || replicas < 1 || replicas > 5 {
					return nil, "", 0, ledger.Errorf(ledger.ErrInvalid, "arbiter %q: replicas must be 1 to 5", shown)
				}
			}
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return nil, "", 0, ledger.Errorf(ledger.ErrInvalid, "arbiter %q: the port %q must be 1 to 65535", shown, p)
			}
		}
		srv := url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User}
		servers = append(servers, srv.String())
	}
	return servers, bucket, replicas, nil
}

// redactURL is raw with every password in it replaced by "xxxxx", for an
// error to show: a URL may carry user:password@ (never printed; see
// SECURITY.md). A part that does not parse is shown as "?".
func redactURL(raw string) string {
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		switch {
		case err != nil && strings.Contains(p, "@"):
			parts[i] = "?"
		case err == nil:
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// checkFiles refuses a credentials or TLS file that cannot be read: a
// setting to fix here (exit 2), not an arbiter to wait for (exit 7).
func (s Settings) checkFiles() error {
	for _, f := range []struct{ what, path string }{{"creds", s.Creds}, {"nkey", s.NKey}, {"ca", s.CA}, {"cert", s.Cert}, {"key", s.Key}} {
		if f.path == "" {
			continue
		}
		fh, err := os.Open(f.path)
		if err == nil {
			var fi os.FileInfo
			if fi, err = fh.Stat(); err == nil && fi.IsDir() {
				err = errors.New("is a directory")
			}
			fh.Close()
		}
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return ledger.Errorf(ledger.ErrInvalid, "arbiter %s file %s: %v", f.what, f.path, err)
		}
	}
	return nil
}

// Dial connects to the arbiter and opens its bucket, creating it (file
// storage) the first time.
func Dial(ctx context.Context, s Settings) (*Arbiter, error) {
	servers, bucket, replicas, err := parse(s.URL)
	if err != nil {
		return nil, err
	}
	su, _ := url.Parse(servers[0])
	shown := su.Scheme + "://" + su.Host + "/" + bucket
	a := &Arbiter{s: s, url: shown, timeout: s.Timeout, Rounds: 64}
	if a.timeout <= 0 {
		a.timeout = DefaultTimeout
	}
	if err := s.checkFiles(); err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Name("bl"), nats.Timeout(a.timeout), nats.MaxReconnects(0), nats.NoCallbacksAfterClientClose()}
	if s.Creds != "" {
		opts = append(opts, nats.UserCredentials(s.Creds))
	}
	if s.NKey != "" {
		o, err := nats.NkeyOptionFromSeed(s.NKey)
		if err != nil {
			return nil, ledger.Errorf(ledger.ErrInvalid, "arbiter nkey %s: %v", s.NKey, err)
		}
		opts = append(opts, o)
	}
	if s.CA != "" {
		opts = append(opts, nats.RootCAs(s.CA))
	}
	if s.Cert != "" || s.Key != "" {
		opts = append(opts, nats.ClientCert(s.Cert, s.Key))
	}
	nc, err := nats.Connect(strings.Join(servers, ","), opts...)
	if err != nil {
		return nil, &UnreachableError{URL: a.url, Op: "connect", Err: err}
	}
	a.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, &UnreachableError{URL: a.url, Op: "jetstream", Err: err}
	}
	rctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	kv, err := js.KeyValue(rctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(rctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, Storage: jetstream.FileStorage, Replicas: replicas,
			Description: "bl claims: one key per card, its lease events as ledger lines"})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(rctx, bucket)
		}
	}
	if err != nil {
		nc.Close()
		return nil, &UnreachableError{URL: a.url, Op: "open bucket " + bucket, Err: err}
	}
	a.kv = kv
	return a, nil
}

// Close ends the connection.
func (a *Arbiter) Close() {
	if a != nil && a.nc != nil {
		a.nc.Close()
	}
}

// Closed reports whether the connection ended (a server gone, or Close).
func (a *Arbiter) Closed() bool { return a.nc == nil || a.nc.IsClosed() }

// URL is the arbiter as messages name it (no credentials).
func (a *Arbiter) URL() string { return a.url }

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Key is the card's key in the bucket: c_<id>, or x_<hex of id> for an
// id with characters a key cannot hold.
func Key(card string) string {
	if plainKey.MatchString(card) {
		return "c_" + card
	}
	return "x_" + hex.EncodeToString([]byte(card))
}

// cardOfKey is the card a key names, "" for a key bl does not write.
func cardOfKey(key string) string {
	switch {
	case strings.HasPrefix(key, "c_"):
		return key[2:]
	case strings.HasPrefix(key, "x_"):
		if id, err := hex.DecodeString(key[2:]); err == nil {
			return string(id)
		}
	}
	return ""
}

// entry is a card's key as read: its lines and revision (0: no key yet).
type entry struct {
	card  string
	lines []byte
	rev   uint64
}

func (a *Arbiter) rctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.timeout)
}

// get reads the card's key.
func (a *Arbiter) get(ctx context.Context, card string) (entry, error) {
	rctx, cancel := a.rctx(ctx)
	defer cancel()
	e, err := a.kv.Get(rctx, Key(card))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return entry{card: card}, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return entry{}, ctx.Err()
		}
		return entry{}, &UnreachableError{URL: a.url, Op: "read " + card, Err: err}
	}
	return entry{card: card, lines: e.Value(), rev: e.Revision()}, nil
}

// errLost: the key moved since it was read; nothing of the write counts.
var errLost = errors.New("arbiter: another write on the card came first")

// cas writes the card's key from e.rev to e.lines + add.
func (a *Arbiter) cas(ctx context.Context, e entry, add []byte) error {
	val := make([]byte, 0, len(e.lines)+len(add))
	val = append(append(val, e.lines...), add...)
	rctx, cancel := a.rctx(ctx)
	defer cancel()
	var err error
	if e.rev == 0 {
		_, err = a.kv.Create(rctx, Key(e.card), val)
	} else {
		_, err = a.kv.Update(rctx, Key(e.card), val, e.rev)
	}
	if err == nil {
		return nil
	}
	var api *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || (errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)) {
		return errLost
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &UnreachableError{URL: a.url, Op: "write " + e.card, Unsure: true, Err: err}
}

// absorb takes the key's lines into b. Every line must be an event on the
// key's card: the value is the card's record, nothing else's.
func absorb(ctx context.Context, b *ledger.Backlog, e entry) error {
	if len(e.lines) == 0 {
		return nil
	}
	if err := checkLines(e); err != nil {
		return err
	}
	_, err := b.Absorb(ctx, e.lines)
	return err
}

// checkLines checks that every line of the key is an event on its card.
func checkLines(e entry) error {
	for rest := e.lines; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		ev, err := ledger.DecodeLine(line)
		if err != nil {
			return ledger.Errorf(ledger.ErrCorrupt, "arbiter key of %s holds a line that is not an event: %v", e.card, err)
		}
		if ev.Card != e.card {
			return ledger.Errorf(ledger.ErrCorrupt, "arbiter key of %s holds an event on %s", e.card, ev.Card)
		}
	}
	return nil
}

// containsID reports whether lines hold the event id's member.
func containsID(lines []byte, id string) bool {
	return bytes.Contains(lines, []byte(`"id":"`+id+`"`))
}

// ArbiterDown marks the error for the command line's exit code 7.
func (e *UnreachableError) ArbiterDown() bool { return true }
