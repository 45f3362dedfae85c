/*
Package database collects database related types, interfaces and
implementations.
*/
package database
