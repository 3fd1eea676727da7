extension NoiseHandshakePattern {
    /// Shorthand for the table below: pre-messages, then the messages in order.
    private static func pattern(
        _ name: String, initiatorPre: [Token] = [], responderPre: [Token] = [], _ messages: [Token]...
    ) -> (String, NoiseHandshakePattern) {
        (
            name,
            NoiseHandshakePattern(
                name: name, initiatorPreMessage: initiatorPre, responderPreMessage: responderPre, messages: messages)
        )
    }

    /// The base patterns of Noise revision 34: one-way (7.4), fundamental interactive (7.5) and
    /// deferred (18.1). Each line's comment is the pattern as the specification writes it.
    static let baseTable: [String: NoiseHandshakePattern] = Dictionary(uniqueKeysWithValues: [
        // One-way patterns (7.4).
        pattern("N", responderPre: [.s], [.e, .es]), // <- s ... -> e, es
        pattern("K", initiatorPre: [.s], responderPre: [.s], [.e, .es, .ss]), // -> s <- s ... -> e, es, ss
        pattern("X", responderPre: [.s], [.e, .es, .s, .ss]), // <- s ... -> e, es, s, ss

        // Fundamental interactive patterns (7.5).
        pattern("NN", [.e], [.e, .ee]), // -> e; <- e, ee
        pattern("NK", responderPre: [.s], [.e, .es], [.e, .ee]), // <- s ... -> e, es; <- e, ee
        pattern("NX", [.e], [.e, .ee, .s, .es]), // -> e; <- e, ee, s, es
        pattern("XN", [.e], [.e, .ee], [.s, .se]), // -> e; <- e, ee; -> s, se
        pattern("XK", responderPre: [.s], [.e, .es], [.e, .ee], [.s, .se]), // <- s ... -> e, es; <- e, ee; -> s, se
        pattern("XX", [.e], [.e, .ee, .s, .es], [.s, .se]), // -> e; <- e, ee, s, es; -> s, se
        pattern("KN", initiatorPre: [.s], [.e], [.e, .ee, .se]), // -> s ... -> e; <- e, ee, se
        pattern("KK", initiatorPre: [.s], responderPre: [.s], [.e, .es, .ss], [.e, .ee, .se]),
        // -> s <- s ... -> e, es, ss; <- e, ee, se
        pattern("KX", initiatorPre: [.s], [.e], [.e, .ee, .se, .s, .es]), // -> s ... -> e; <- e, ee, se, s, es
        pattern("IN", [.e, .s], [.e, .ee, .se]), // -> e, s; <- e, ee, se
        pattern("IK", responderPre: [.s], [.e, .es, .s, .ss], [.e, .ee, .se]), // <- s ... -> e, es, s, ss; <- e, ee, se
        pattern("IX", [.e, .s], [.e, .ee, .se, .s, .es]), // -> e, s; <- e, ee, se, s, es

        // Deferred patterns (18.1).
        pattern("NK1", responderPre: [.s], [.e], [.e, .ee, .es]), // <- s ... -> e; <- e, ee, es
        pattern("NX1", [.e], [.e, .ee, .s], [.es]), // -> e; <- e, ee, s; -> es
        pattern("X1N", [.e], [.e, .ee], [.s], [.se]), // -> e; <- e, ee; -> s; <- se
        pattern("X1K", responderPre: [.s], [.e, .es], [.e, .ee], [.s], [.se]), // <- s ... -> e, es; <- e, ee; -> s; <- se
        pattern("XK1", responderPre: [.s], [.e], [.e, .ee, .es], [.s, .se]), // <- s ... -> e; <- e, ee, es; -> s, se
        pattern("X1K1", responderPre: [.s], [.e], [.e, .ee, .es], [.s], [.se]), // <- s ... -> e; <- e, ee, es; -> s; <- se
        pattern("X1X", [.e], [.e, .ee, .s, .es], [.s], [.se]), // -> e; <- e, ee, s, es; -> s; <- se
        pattern("XX1", [.e], [.e, .ee, .s], [.es, .s, .se]), // -> e; <- e, ee, s; -> es, s, se
        pattern("X1X1", [.e], [.e, .ee, .s], [.es, .s], [.se]), // -> e; <- e, ee, s; -> es, s; <- se
        pattern("K1N", initiatorPre: [.s], [.e], [.e, .ee], [.se]), // -> s ... -> e; <- e, ee; -> se
        pattern("K1K", initiatorPre: [.s], responderPre: [.s], [.e, .es], [.e, .ee], [.se]),
        // -> s <- s ... -> e, es; <- e, ee; -> se
        pattern("KK1", initiatorPre: [.s], responderPre: [.s], [.e], [.e, .ee, .se, .es]),
        // -> s <- s ... -> e; <- e, ee, se, es
        pattern("K1K1", initiatorPre: [.s], responderPre: [.s], [.e], [.e, .ee, .es], [.se]),
        // -> s <- s ... -> e; <- e, ee, es; -> se
        pattern("K1X", initiatorPre: [.s], [.e], [.e, .ee, .s, .es], [.se]), // -> s ... -> e; <- e, ee, s, es; -> se
        pattern("KX1", initiatorPre: [.s], [.e], [.e, .ee, .se, .s], [.es]), // -> s ... -> e; <- e, ee, se, s; -> es
        pattern("K1X1", initiatorPre: [.s], [.e], [.e, .ee, .s], [.se, .es]), // -> s ... -> e; <- e, ee, s; -> se, es
        pattern("I1N", [.e, .s], [.e, .ee], [.se]), // -> e, s; <- e, ee; -> se
        pattern("I1K", responderPre: [.s], [.e, .es, .s], [.e, .ee], [.se]), // <- s ... -> e, es, s; <- e, ee; -> se
        pattern("IK1", responderPre: [.s], [.e, .s], [.e, .ee, .se, .es]), // <- s ... -> e, s; <- e, ee, se, es
        pattern("I1K1", responderPre: [.s], [.e, .s], [.e, .ee, .es], [.se]), // <- s ... -> e, s; <- e, ee, es; -> se
        pattern("I1X", [.e, .s], [.e, .ee, .s, .es], [.se]), // -> e, s; <- e, ee, s, es; -> se
        pattern("IX1", [.e, .s], [.e, .ee, .se, .s], [.es]), // -> e, s; <- e, ee, se, s; -> es
        pattern("I1X1", [.e, .s], [.e, .ee, .s], [.se, .es]), // -> e, s; <- e, ee, s; -> se, es
    ])
}
