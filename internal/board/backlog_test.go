package board

import "github.com/bl-backlog/bl/ledger"

// The board reads a *ledger.Backlog through the few methods it names.
var _ Backlog = (*ledger.Backlog)(nil)
