package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/lexview/lexview/scripts/internal/benchkit"
)

// checkSample requires a 200 page of pageLimit records with a cursor from
// the small collection's query at base.
func checkSample(base string) error {
	req, _ := http.NewRequest(http.MethodGet, base+"/xrpc/"+smallQuery+"?limit="+strconv.Itoa(pageLimit), nil)
	req.Header.Set("X-Client-Key", benchkit.ClientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	var page struct {
		Records []map[string]any `json:"records"`
		Cursor  string           `json:"cursor"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return fmt.Errorf("decode: %v", err)
	}
	if len(page.Records) != pageLimit || page.Cursor == "" {
		return fmt.Errorf("got %d records, cursor %q; want %d and a cursor", len(page.Records), page.Cursor, pageLimit)
	}
	if uri, _ := page.Records[0]["uri"].(string); !strings.HasPrefix(uri, "at://") {
		return fmt.Errorf("first record has no uri: %v", page.Records[0])
	}
	return nil
}
