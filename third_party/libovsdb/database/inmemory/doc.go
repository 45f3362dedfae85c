/*
Package inmemory provides a in-memory database implementation
*/
package inmemory
