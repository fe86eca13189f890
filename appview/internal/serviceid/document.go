package serviceid

import (
	"context"

	"github.com/lexview/lexview/appview/internal/domains"
	"github.com/lexview/lexview/appview/internal/fail"
)

// Document is a DID document as /.well-known/did.json serves it.
type Document struct {
	Context            []string             `json:"@context"`
	ID                 string               `json:"id"`
	VerificationMethod []DocumentMethod     `json:"verificationMethod"`
	Service            []DocumentServiceRef `json:"service"`
}

// DocumentMethod is a Multikey verification method of a Document.
type DocumentMethod struct {
	ID                 string `json:"id"`
	Type               string `json:"type"`
	Controller         string `json:"controller"`
	PublicKeyMultibase string `json:"publicKeyMultibase"`
}

// DocumentServiceRef is a service entry of a Document.
type DocumentServiceRef struct {
	ID              string `json:"id"`
	Type            string `json:"type"`
	ServiceEndpoint string `json:"serviceEndpoint"`
}

// DocumentFor returns the DID document served on host (a request's Host).
// Only the primary domain serves one, since its DID is the instance's:
// another registered domain, or an unknown host, is NotFound.
func (s *Service) DocumentFor(ctx context.Context, host string) (Document, error) {
	host = normalHost(host)
	id, err := s.Get(ctx)
	if err != nil {
		return Document{}, err
	}
	if id.Mode != ModeDIDWeb {
		return Document{}, fail.New(fail.NotFound, "no DID document here: the instance's identity is not a did:web (resolve its DID at the PLC directory)")
	}
	primary, ok := s.opt.Domains.Primary(ctx)
	if !ok || domains.Host(primary.URL) != host {
		if _, known, err := s.opt.Domains.ByHost(ctx, host); err != nil {
			return Document{}, err
		} else if known {
			return Document{}, fail.New(fail.NotFound, "no DID document on this domain: the instance's DID names its primary domain")
		}
		return Document{}, fail.New(fail.NotFound, "unknown host")
	}
	did := domains.DIDWeb(host)
	if did == "" {
		return Document{}, fail.New(fail.NotFound, "the primary domain's host cannot be a did:web")
	}
	methods, err := s.Methods(ctx)
	if err != nil {
		return Document{}, err
	}
	doc := Document{
		Context:            []string{"https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"},
		ID:                 did,
		VerificationMethod: []DocumentMethod{},
		Service:            []DocumentServiceRef{},
	}
	for _, m := range methods {
		doc.VerificationMethod = append(doc.VerificationMethod, DocumentMethod{
			ID: did + "#" + m.Fragment, Type: "Multikey", Controller: did, PublicKeyMultibase: m.PublicKeyMultibase,
		})
	}
	return doc, nil
}

// serviceRef is a service the instance's DID document lists.
type serviceRef struct {
	Fragment, Type, Endpoint string
}

// documentServices are the services the instance's DID document lists,
// and a did:plc's PLC state: none until service entries are built.
func (s *Service) documentServices(context.Context) ([]serviceRef, error) {
	return nil, nil
}
