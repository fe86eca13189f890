package backfill

import (
	"errors"
	"net/http"

	"github.com/lexview/lexview/internal/repocar"
)

// Why a repository failed (storage.BackfillRepo.FailureReason): the job's
// failures are counted by these words, in the admin API, the event stream,
// the metrics and the dashboard.
const (
	// ReasonUnresolvable: the DID did not resolve to a document naming a
	// usable PDS.
	ReasonUnresolvable = "unresolvable_did"
	// ReasonUnreachable: the PDS did not answer (refused or dropped
	// connections, timeouts, downloads cut short, 5xx answers) through
	// every retry.
	ReasonUnreachable = "unreachable_host"
	// ReasonRateLimited: the PDS kept answering 429 beyond the waits
	// allowed.
	ReasonRateLimited = "rate_limited"
	// ReasonDeactivated, ReasonTakenDown and ReasonDeleted: the PDS
	// refused the repository as deactivated (RepoDeactivated), taken down
	// (RepoTakendown, RepoSuspended) or not found (RepoNotFound).
	ReasonDeactivated = "account_deactivated"
	ReasonTakenDown   = "account_taken_down"
	ReasonDeleted     = "account_deleted"
	// ReasonVerification: the export did not verify (hashes, signature,
	// another account's commit, malformed).
	ReasonVerification = "verification_failed"
	// ReasonTooLarge: the export is larger than the bound.
	ReasonTooLarge = "too_large"
	// ReasonOther is any other failure (a malformed answer, an unexpected
	// 4xx).
	ReasonOther = "other"
)

// failureReason names why a repository failed with err; resolving is true
// when it failed while resolving its DID.
func failureReason(err error, resolving bool) string {
	if resolving {
		return ReasonUnresolvable
	}
	var xe *XRPCError
	switch {
	case errors.Is(err, repocar.ErrTooLarge):
		return ReasonTooLarge
	case errors.Is(err, repocar.ErrMalformed), errors.Is(err, repocar.ErrTampered),
		errors.Is(err, repocar.ErrWrongRepo), errors.Is(err, repocar.ErrBadSignature), errors.Is(err, repocar.ErrIdentity):
		return ReasonVerification
	case errors.As(err, &xe):
		switch {
		case xe.Status == http.StatusTooManyRequests:
			return ReasonRateLimited
		case xe.Name == "RepoDeactivated":
			return ReasonDeactivated
		case xe.Name == "RepoTakendown" || xe.Name == "RepoSuspended":
			return ReasonTakenDown
		case xe.Name == "RepoNotFound":
			return ReasonDeleted
		case xe.Status == http.StatusNotImplemented || xe.Status >= 400 && notImplemented(err):
			return ReasonOther // the method is not offered: asking again will not help
		case xe.Status >= 500:
			return ReasonUnreachable
		}
		return ReasonOther
	case errors.Is(err, errBadAnswer):
		return ReasonOther
	}
	return ReasonUnreachable
}
