/*
Package server provides an alpha-quality implementation of an OVSDB Server

It is designed only to be used for testing the functionality of the client
library such that assertions can be made on the cache that backs the
client's monitor or the server
*/
package server
