/*
Package transaction provides a transaction implementation
*/
package transaction
