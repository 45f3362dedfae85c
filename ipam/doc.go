// Package ipam allocates addresses per subnet and family from lock-free
// bitmaps and makes each allocation durable with an AddressClaim in the API
// server.
package ipam
