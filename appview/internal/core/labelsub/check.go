package labelsub

import (
	"strings"
	"time"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/bluesky-social/indigo/atproto/labeling"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/storage"
)

// Reasons a label (or a frame) is refused, as in the
// lexview_labels_refused_total metric and labeler.refused_labels entries.
const (
	RefusedWrongSrc     = "wrong_src"       // src is not the labeler
	RefusedBadURI       = "bad_uri"         // uri neither an AT URI nor a DID
	RefusedBadCID       = "bad_cid"         // cid is not a CID
	RefusedBadVal       = "bad_val"         // val empty or over 128 bytes
	RefusedBadVersion   = "bad_version"     // ver is not 1
	RefusedBadCts       = "bad_cts"         // cts is not a datetime
	RefusedFutureCts    = "future_cts"      // cts further than MaxFuture ahead
	RefusedBadExp       = "bad_exp"         // exp is not a datetime
	RefusedUnsigned     = "unsigned"        // no sig
	RefusedBadSignature = "bad_signature"   // sig does not verify with the label key
	RefusedMalformed    = "malformed_frame" // a frame that does not decode (counts frames)
	RefusedOversized    = "oversized_frame" // a frame over MaxFrame (counts frames)
)

// maxVal is the longest label value (com.atproto.label.defs#label.val).
const maxVal = 128

// checkLabel checks everything about a label but its signature, and
// returns it in the form the signature is verified on and in the stored
// form; reason is "" when it passes.
func checkLabel(l *comatproto.LabelDefs_Label, src string, now time.Time, maxFuture time.Duration) (labeling.Label, storage.Label, string) {
	if l == nil {
		return labeling.Label{}, storage.Label{}, RefusedMalformed
	}
	lab := labeling.FromLexicon(l)
	if lab.SourceDID != src {
		return lab, storage.Label{}, RefusedWrongSrc
	}
	if lab.Version != labeling.ATPROTO_LABEL_VERSION {
		return lab, storage.Label{}, RefusedBadVersion
	}
	if !validSubject(lab.URI) {
		return lab, storage.Label{}, RefusedBadURI
	}
	if lab.Val == "" || len(lab.Val) > maxVal {
		return lab, storage.Label{}, RefusedBadVal
	}
	out := storage.Label{Src: src, URI: lab.URI, Val: lab.Val, Sig: []byte(lab.Sig), Ver: lab.Version}
	if lab.CID != nil {
		if _, err := syntax.ParseCID(*lab.CID); err != nil {
			return lab, storage.Label{}, RefusedBadCID
		}
		out.CID = *lab.CID
	}
	cts, err := syntax.ParseDatetimeLenient(lab.CreatedAt)
	if err != nil {
		return lab, storage.Label{}, RefusedBadCts
	}
	out.Cts = cts.Time().UTC()
	if out.Cts.After(now.Add(maxFuture)) {
		return lab, storage.Label{}, RefusedFutureCts
	}
	if lab.ExpiresAt != nil {
		exp, err := syntax.ParseDatetimeLenient(*lab.ExpiresAt)
		if err != nil {
			return lab, storage.Label{}, RefusedBadExp
		}
		out.Exp = exp.Time().UTC()
	}
	if lab.Negated != nil {
		out.Neg = *lab.Negated
	}
	if len(lab.Sig) == 0 {
		return lab, storage.Label{}, RefusedUnsigned
	}
	return lab, out, ""
}

// validSubject reports whether a label's uri is an AT URI (of a record or
// a repository) or a DID.
func validSubject(uri string) bool {
	if strings.HasPrefix(uri, "at://") {
		_, err := syntax.ParseATURI(uri)
		return err == nil
	}
	_, err := syntax.ParseDID(uri)
	return err == nil
}
