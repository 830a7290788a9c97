// Package policy owns Facet's policy language: a hand-written lexer and
// recursive-descent parser for the DSL of DESIGN.md (in the manner of
// text/template/parse), the checker that validates policies against a
// caller-supplied Vocabulary (filters, metrics, object types, targets), and
// the compiler that turns checked policies into the per-request lookup
// Table the data plane consults on every request.
//
// # Language
//
//	policy     := [name ':'] 'FOR' targets ['WHEN' condition] 'DO' actions ['TO' objconds]
//	targets    := target {',' target}
//	target     := ('TENANT'|'BUCKET'|'CONTAINER'|'OBJECT'|'GROUP'|'G'|'VOLUME') [':'] ident
//	            | 'ALL' ['TENANTS'|'BUCKETS'|'CONTAINERS'|'VOLUMES']
//	condition  := disj ; disj := conj {'OR' conj} ; conj := term {'AND' term}
//	term       := '(' condition ')' | cmp
//	cmp        := metric op value | 'OBJECT_TYPE' eq ident | 'OBJECT_SIZE' op size
//	            | 'OBJECT_NAME' eq glob | 'OBJECT_TAG' eq key [':' value]
//	actions    := action {',' action}
//	action     := ('SET'|'DELETE') filter ['WITH' param {',' param}] ['ON' stage]
//	              ['TRANSIENT'|'PERSISTENT'] ['CALLABLE']
//	objconds   := objcmp {(',' | 'AND') objcmp}
//	op         := '<' | '<=' | '>' | '>=' | '=' | '==' | '!='   ; eq := '=' | '==' | '!='
//
// Lexical rules, decided here and relied on by the tests:
//
//   - Keywords are case-insensitive. The structural keywords FOR, WHEN, DO,
//     TO, SET, DELETE, WITH, ON, AND, OR, TRANSIENT, PERSISTENT and CALLABLE
//     are reserved: a name equal to one of them must be double-quoted. All
//     other keywords (TENANT, ALL, OBJECT_TYPE, stage names...) are keywords
//     only where the grammar expects them, so a tenant may be called "g".
//   - A word is a run of letters, digits and _ - . / * ? % [ ] ^ + @ ~; a
//     word that starts with a digit and reads as digits[.digits][unit] is a
//     number (10MB/s, 1.5GiB, 5%, 300ms, 3000). Any other text goes between
//     double quotes, where \" and \\ are the only escapes.
//   - One policy per line. '#' starts a comment that runs to the end of the
//     line. A line that ends with ',' or '\' continues on the next non-blank
//     line; nothing else does.
//   - OBJECT_TYPE, OBJECT_NAME and OBJECT_TAG also accept '!=' (negation), a
//     small superset of DESIGN.md's '='.
//
// Units are case-insensitive and 'b' always means bytes (there are no bit
// units): sizes B, KB, MB, GB, TB, PB (powers of 1000) and KiB, MiB, GiB,
// TiB, PiB (powers of 1024); a bare number is bytes. Rates are a size unit
// followed by /s or ps (10MB/s, 10MBps); a bare number is bytes/s.
// Durations take ns, us, ms, s, m, h. Percentages take %, and a bare number
// where a percentage is wanted is a fraction (0.05 = 5%). Operation rates
// are bare numbers or take /s, ops, ops/s or iops.
//
// # Semantics decided here
//
//   - A filter is specialised per filter name: among the entries whose
//     target covers the request and whose object conditions hold, the most
//     specific level wins (object > bucket > tenant > group > ALL) and, at
//     one level, the latest declared. A winning DELETE removes the filter.
//     Steps run in declaration order of their winning entries (policy order,
//     then action order); the compiler warns about bad orders instead of
//     reordering.
//   - A bucket or object entry whose object condition is false does not
//     apply, so the broader entry for the same filter does.
//   - An action without ON runs at the first stage its filter declares.
//     DELETE takes neither parameters nor ON: it removes the filter at every
//     stage.
//   - TRANSIENT needs a metric trigger (a static policy is always in force);
//     CALLABLE cannot have one (a callable filter runs when a request asks
//     for it, which a controller cannot also switch on and off).
//   - SET bandwidth (tenants) and SET throttle (volumes) are SLO records,
//     not pipeline filters, even if the vocabulary knows a filter of that
//     name.
//   - OBJECT_NAME globs follow path.Match except that '*' and '?' also
//     match '/', so "*.log" matches "a/b/c.log". OBJECT_TYPE matches when
//     the key ends with one of the type's extensions or the Content-Type
//     matches one of its media types ("image/*" is a prefix). OBJECT_SIZE
//     is false when the size is unknown (negative). OBJECT_TAG=k tests that
//     user metadata k (x-amz-meta-k) is present; OBJECT_TAG=k:v that it
//     equals v.
//   - Bare ALL means every tenant; ALL VOLUMES every volume.
//
// Parse and Check stop at the first error, an *Error that carries the
// position, the source line, a caret under the fault and, when the
// vocabulary has a close name, a suggestion.
//
// # Use
//
//	ps, err := policy.ParseAndCheck("request", text, vocab) // *Error on failure
//	c, err := policy.Compile(allPolicies, groups)           // c.Warnings: bad orders...
//	t := c.Static()                                         // or c.Table(activeDynamicIDs...)
//	r := t.Resolve(policy.Query{Tenant: "t1", Bucket: "b1", Key: k, Size: n, Method: filter.MethodPut})
//
// A Table is immutable and safe for concurrent use; the data plane swaps
// whole tables. Resolve does a few map lookups over views precomputed per
// tenant, bucket and object, then evaluates only the object conditions
// that could change the answer; it allocates the returned steps once.
// Its cost grows with the number of distinct conditional entries that
// cover one request, not with the number of policies.
package policy
