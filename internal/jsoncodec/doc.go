// Package jsoncodec is the JSON serializer of the custom resources'
// clients (AddressClaims, kube-ovn IPs and the rest): the API server serves
// custom resources as JSON only, and every replica decodes every claim and
// IP record event, so the JSON path is a large part of a replica's CPU per
// pod and of the time it takes to load its caches.
//
// It is client-go's own JSON serializer with two steps made cheaper; the
// objects it returns are the ones client-go's would:
//
//   - Reading an object's apiVersion and kind. client-go's serializer
//     decodes the whole document once just for those two fields (a full
//     validating scan and a full decoding scan with encoding/json) before
//     decoding it into its type. Here the top level of the object is walked
//     once with a scanner that only follows strings and brackets, and the
//     two fields are taken from it when they are plain strings; anything
//     else (an escaped or non-ASCII key, a value that is not a plain
//     string, something that is not an object) falls back to client-go's
//     reading. The walk keeps encoding/json's rules: keys match without
//     regard to case and the last of a repeated key wins. The document is
//     still checked whole by the decode into its type, which follows.
//   - Splitting a watch event. A watch stream's frame is the envelope
//     {"type":…,"object":{…}}; client-go's serializer reads its kind (a
//     full decode), then decodes it again into the envelope, copying the
//     object out on the way. Here the envelope's two members are found with
//     the same walk and the object's bytes copied once. This applies only
//     to the stream serializer, whose frames client-go's framer has already
//     read as whole, valid JSON values; an envelope with any other member
//     falls back.
//
// Encoding, YAML, and decoding into runtime.Unknown are client-go's own.
package jsoncodec
