package refpds

import (
	"sync"
	"testing"
	"time"
)

// mailLine is a message the PDS would have e-mailed, as start-network.mjs
// prints it.
type mailLine struct {
	Mail  string `json:"mail"` // the kind: plc_operation
	To    string `json:"to"`
	Token string `json:"token"`
}

// mailbox keeps the PLC operation tokens sent to each address.
type mailbox struct {
	mu     sync.Mutex
	tokens map[string]chan string
}

func (m *mailbox) inbox(to string) chan string {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.tokens[to]
	if !ok {
		c = make(chan string, 16)
		m.tokens[to] = c
	}
	return c
}

func (m *mailbox) deliver(l mailLine) {
	if l.Mail != "plc_operation" {
		return
	}
	select {
	case m.inbox(l.To) <- l.Token:
	default: // an inbox nobody reads; the test will time out on its own
	}
}

// PLCToken waits for the next PLC operation token the PDS sends to email
// (after com.atproto.identity.requestPlcOperationSignature) and returns it:
// the confirmation code its user would read in the e-mail.
func (n *Network) PLCToken(t testing.TB, email string) string {
	t.Helper()
	select {
	case tok := <-n.mail.inbox(email):
		return tok
	case <-time.After(10 * time.Second):
		t.Fatalf("refpds: no PLC operation token sent to %s within 10s", email)
		return ""
	}
}
