package ledger

import (
	"testing"
	"testing/cryptotest"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// TestIDsSkipCryptoRand: event and card ids come from the runtime's
// generator, not from crypto/rand, whose first read costs every write
// tens of microseconds: with crypto/rand made to repeat one stream, the
// ids still differ.
func TestIDsSkipCryptoRand(t *testing.T) {
	for name, id := range map[string]func() string{"event": wire.NewEventID, "card": NewCardID} {
		cryptotest.SetGlobalRandom(t, 1)
		a := id()
		cryptotest.SetGlobalRandom(t, 1)
		if b := id(); a == b {
			t.Errorf("two %s ids from one crypto/rand stream are both %s: they come from crypto/rand", name, a)
		}
	}
}
