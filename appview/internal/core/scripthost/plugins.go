package scripthost

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/lexview/lexview/script"
)

// CallPlugin runs a plugin's script-library function within the script's
// deadline (ctx).
func (h host) CallPlugin(ctx context.Context, _ *script.Invocation, id, fn string, input json.RawMessage) (json.RawMessage, error) {
	if h.r.opt.Plugins == nil {
		return nil, errors.New("plugins are not available")
	}
	return h.r.opt.Plugins.Call(ctx, id, fn, input)
}
