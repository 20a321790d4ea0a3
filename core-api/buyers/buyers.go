// Package buyers is the service of buyers, a merchant account's customers.
package buyers

import (
	"context"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

// Store is the core database as this service uses it. Every call is scoped
// to a merchant account; another account's buyer is coreapi.ErrNotFound.
type Store interface {
	// CreateBuyer inserts a buyer; a taken external_identifier is a
	// *coreapi.DuplicateError naming the holder.
	CreateBuyer(ctx context.Context, merchant string, f coreapi.BuyerFields) (*coreapi.Buyer, error)
	FindBuyer(ctx context.Context, merchant, id string) (*coreapi.Buyer, error)
	// UpdateBuyer applies a partial update: absent fields keep their
	// value, null clears.
	UpdateBuyer(ctx context.Context, merchant, id string, f coreapi.BuyerFields) (*coreapi.Buyer, error)
	// DeleteBuyer removes a buyer; one that records still refer to is
	// coreapi.ErrInUse.
	DeleteBuyer(ctx context.Context, merchant, id string) error
	// ListBuyers returns up to page.FetchLimit() buyers in the page's
	// query order, with the summary fields only.
	ListBuyers(ctx context.Context, merchant string, f coreapi.BuyerFilter, page pagination.Page) ([]coreapi.Buyer, error)
}

// Service manages buyers.
type Service struct {
	Store Store
}

// Create validates f and stores a buyer in the merchant account.
func (s *Service) Create(ctx context.Context, merchant string, f coreapi.BuyerFields) (*coreapi.Buyer, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return s.Store.CreateBuyer(ctx, merchant, f)
}

// Get returns buyer id of the merchant account.
func (s *Service) Get(ctx context.Context, merchant, id string) (*coreapi.Buyer, error) {
	return s.Store.FindBuyer(ctx, merchant, id)
}

// Update validates f and applies it to buyer id.
func (s *Service) Update(ctx context.Context, merchant, id string, f coreapi.BuyerFields) (*coreapi.Buyer, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return s.Store.UpdateBuyer(ctx, merchant, id, f)
}

// Delete removes buyer id of the merchant account.
func (s *Service) Delete(ctx context.Context, merchant, id string) error {
	return s.Store.DeleteBuyer(ctx, merchant, id)
}

// List returns a page of the merchant account's buyers matching f.
func (s *Service) List(ctx context.Context, merchant string, f coreapi.BuyerFilter, page pagination.Page) ([]coreapi.Buyer, error) {
	return s.Store.ListBuyers(ctx, merchant, f, page)
}
