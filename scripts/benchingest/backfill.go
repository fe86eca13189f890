package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/internal/jetstreamtest"
)

// The backfill phase's data set: -backfill-records records of collPost
// spread evenly over backfillHosts PDS stand-ins with backfillReposPerHost
// repositories each.
const (
	backfillHosts        = 4
	backfillReposPerHost = 25
	backfillPageSize     = 100 // the service's listRecords page size
	// backfillFloor is the backfill rate (records/s) the live stream of the
	// phase is sized for, with backfillSlack to spare: a slower backfill
	// outlasts the stream.
	backfillFloor = 5000
	backfillSlack = 10 * time.Second
)

// backfillLiveEvents is how many live events the backfill phase may
// publish: the warmup, then the backfill at backfillFloor, plus slack.
func backfillLiveEvents(opt options) int {
	if opt.backfillRecords == 0 {
		return 0
	}
	d := opt.steadyWarmup + backfillSlack + time.Duration(float64(opt.backfillRecords)/backfillFloor*float64(time.Second))
	return int(d.Seconds() * float64(opt.steadyRate))
}

// backfillDID is the i-th repository's DID: did:plc: and 24 base32
// characters, like the stream's.
func backfillDID(i int) string {
	sum := sha256.Sum256([]byte("benchingest backfill " + strconv.Itoa(i)))
	return "did:plc:" + b32.EncodeToString(sum[:15])
}

// backfillFields make the stand-ins' records valid app.bench.post records
// (text and createdAt are required) of about 500 bytes of JSON, with
// backfillFiller: a text near the 300-grapheme limit, a language and a link.
var backfillFields = map[string]any{
	"createdAt": "2025-06-01T12:00:00.000Z",
	"langs":     []string{"en"},
	"link": map[string]any{
		"uri":   "https://example.com/articles/backfilled-history",
		"title": "An older post fetched by a backfill",
	},
}

var backfillFiller = " " + strings.TrimSpace(strings.Repeat("lorem ipsum ", 20))

// backfillSource is the PLC and PDS stand-ins holding the records a backfill
// job fetches.
type backfillSource struct {
	plc         *backfilltest.PLC
	hosts       []*backfilltest.PDS
	dids        []string
	recordBytes float64 // mean bytes of a record's JSON
}

// startBackfillSource starts the stand-ins with records records in all.
func startBackfillSource(ctx context.Context, records int) (*backfillSource, error) {
	src := &backfillSource{plc: backfilltest.StartPLC()}
	repos := backfillHosts * backfillReposPerHost
	for h := range backfillHosts {
		pds := backfilltest.StartPDS()
		src.hosts = append(src.hosts, pds)
		pds.SetFiller(backfillFiller)
		pds.SetFields(backfillFields)
		for r := range backfillReposPerHost {
			i := h*backfillReposPerHost + r
			did := backfillDID(i)
			n := records / repos
			if i < records%repos {
				n++
			}
			src.plc.Add(did, pds.URL())
			pds.AddRepo(did, collPost, n, "3kaaaaaaaaaa2")
			src.dids = append(src.dids, did)
		}
		pds.Prerender(backfillPageSize)
	}
	var err error
	if src.recordBytes, err = meanRecordBytes(ctx, src.hosts[0].URL(), src.dids[0]); err != nil {
		src.close()
		return nil, fmt.Errorf("reading the PDS stand-in: %w", err)
	}
	return src, nil
}

func (src *backfillSource) close() {
	for _, h := range src.hosts {
		h.Close()
	}
	src.plc.Close()
}

// meanRecordBytes reads the first page of did's records from a PDS and
// returns the mean size of their JSON.
func meanRecordBytes(ctx context.Context, pdsURL, did string) (float64, error) {
	q := url.Values{"repo": {did}, "collection": {collPost}, "limit": {strconv.Itoa(backfillPageSize)}}
	var page struct {
		Records []struct {
			Value json.RawMessage `json:"value"`
		} `json:"records"`
	}
	if err := callJSON(ctx, http.MethodGet, pdsURL+"/xrpc/com.atproto.repo.listRecords?"+q.Encode(), "", nil, &page); err != nil {
		return 0, err
	}
	if len(page.Records) == 0 {
		return 0, errors.New("no records listed")
	}
	total := 0
	for _, r := range page.Records {
		total += len(r.Value)
	}
	return float64(total) / float64(len(page.Records)), nil
}

var adminHTTP = &http.Client{Timeout: time.Minute}

// callJSON sends body (when not nil) as JSON with the bearer key (when not
// "") and decodes a 2xx answer into out.
func callJSON(ctx context.Context, method, u, key string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := adminHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, bytes.TrimSpace(raw))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	return nil
}

// backfillJob is the part of the admin API's job resource the phase reads.
type backfillJob struct {
	ID           string  `json:"id"`
	Status       string  `json:"status"`
	Stage        string  `json:"stage"`
	TotalRecords *int64  `json:"total_records"`
	Error        *string `json:"error"`
}

// describe summarises a job for error messages.
func (j backfillJob) describe() string {
	s := fmt.Sprintf("job %s: status %s, stage %s", j.ID, j.Status, j.Stage)
	if j.TotalRecords != nil {
		s += fmt.Sprintf(", %d records", *j.TotalRecords)
	}
	if j.Error != nil {
		s += ", error " + strconv.Quote(*j.Error)
	}
	return s
}

// backfill publishes live events at -steady-rate and, after the warmup,
// has the service backfill the stand-ins' records through the admin API;
// the window from the job's creation to its completion is measured.
func (r *runner) backfill(ctx context.Context, backend, dbURL string, live []jetstreamtest.Event) (phaseResult, error) {
	res := phaseResult{name: "backfill", events: len(live), inProcess: r.opt.inProcess}
	want := float64(r.opt.backfillRecords)
	src, err := startBackfillSource(ctx, r.opt.backfillRecords)
	if err != nil {
		return res, err
	}
	defer src.close()
	res.recordBytes = src.recordBytes
	key, err := r.adminKey(ctx, dbURL)
	if err != nil {
		return res, err
	}
	events := sliceSource(live)
	w, err := r.startLive(ctx, serviceConfig{dbURL: dbURL, plcURL: src.plc.URL(), allowPrivateNetworks: true}, &events, backend, "backfill", &res)
	if err != nil {
		return res, err
	}
	defer w.close()
	svc, pub, r0 := w.svc, w.pub, w.first
	var created backfillJob
	if err := callJSON(ctx, http.MethodPost, svc.baseURL()+"/admin/backfill", key,
		map[string]any{"collection": collPost, "dids": src.dids}, &created); err != nil {
		return res, err
	}
	job, maxQueue, err := r.waitJob(ctx, svc, key, created.ID)
	if err != nil {
		return res, err
	}
	r1, err := r.measure(ctx, svc)
	if err != nil {
		return res, err
	}
	w.stopProfile()
	res.liveRanOut = pub.ranOut()
	pub.stop()
	s0, s1 := r0.metrics, r1.metrics
	res.maxQueue = maxQueue
	res.window(r0, r1)
	res.backfillRecords = s1.backfillIndexed - s0.backfillIndexed
	res.backfillRate = res.backfillRecords / res.wall.Seconds()
	rejected := s1.backfillRejected - s0.backfillRejected
	res.complete = res.backfillRecords == want && rejected == 0 && job.TotalRecords != nil && *job.TotalRecords == int64(want)
	if !res.complete {
		log.Printf("%s: WRONG RESULT: the backfill indexed %.0f records and rejected %.0f, want %.0f (%s)",
			backend, res.backfillRecords, rejected, want, job.describe())
	}
	return res, nil
}

// waitJob polls the admin API until the job completes (an error when it
// fails, is cancelled or outlasts -timeout), scraping the write queue's
// depth on the way; it returns the job and the largest depth seen.
func (r *runner) waitJob(ctx context.Context, svc service, key, id string) (job backfillJob, maxQueue float64, err error) {
	const poll = 50 * time.Millisecond // bounds the error of the window
	deadline := time.Now().Add(r.opt.timeout)
	nextScrape, nextReport := time.Now(), time.Now().Add(10*time.Second)
	for {
		var jobs []backfillJob
		if err := callJSON(ctx, http.MethodGet, svc.baseURL()+"/admin/backfill/status", key, nil, &jobs); err != nil {
			return job, maxQueue, err
		}
		job = backfillJob{ID: id, Status: "(not listed)"}
		for _, j := range jobs {
			if j.ID == id {
				job = j
			}
		}
		switch job.Status {
		case "completed":
			return job, maxQueue, nil
		case "failed", "cancelled", "(not listed)":
			return job, maxQueue, fmt.Errorf("backfill %s", job.describe())
		}
		if time.Now().After(nextScrape) {
			if s, err := scrapeMetrics(ctx, svc.metricsURL()); err == nil {
				maxQueue = max(maxQueue, s.queue)
			}
			nextScrape = time.Now().Add(250 * time.Millisecond)
		}
		if time.Now().After(nextReport) {
			log.Printf("backfill %s", job.describe())
			nextReport = nextReport.Add(10 * time.Second)
		}
		if c, ok := svc.(*child); ok {
			if gone, err := c.exited(); gone {
				return job, maxQueue, fmt.Errorf("appview exited (%v):\n%s", err, logTail(c.logPath, 20))
			}
		}
		if time.Now().After(deadline) {
			return job, maxQueue, fmt.Errorf("backfill %s after %s", job.describe(), r.opt.timeout)
		}
		if err := sleepUntil(ctx, time.Now().Add(poll)); err != nil {
			return job, maxQueue, err
		}
	}
}
