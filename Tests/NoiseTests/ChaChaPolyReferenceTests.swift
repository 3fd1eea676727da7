import XCTest

/// The pure-Swift reference cipher against RFC 8439's own vectors, before it judges OpenSSL's.
final class ChaChaPolyReferenceTests: XCTestCase {
    /// RFC 8439 2.3.2: the block function.
    func testBlockMatchesSection2_3_2() {
        let block = ChaChaPolyReference.block(
            key: Array(0...31), counter: 1, nonce: Hex.bytes("000000090000004a00000000"))
        XCTAssertEqual(
            Hex.string(block),
            "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4ed2826446079faa0914c2d705d98b02a2"
                + "b5129cd1de164eb9cbd083e8a2503c4e")
    }

    /// RFC 8439 2.5.2: Poly1305 of "Cryptographic Forum Research Group".
    func testPoly1305MatchesSection2_5_2() {
        let tag = ChaChaPolyReference.poly1305(
            message: Array("Cryptographic Forum Research Group".utf8),
            key: Hex.bytes("85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b"))
        XCTAssertEqual(Hex.string(tag), "a8061dc1305136c6c22b8baf0c0127a9")
    }

    /// RFC 8439 2.8.2: the AEAD seal.
    func testSealMatchesSection2_8_2() {
        let text = "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
        let sealed = ChaChaPolyReference.seal(
            key: Array(0x80...0x9f), nonce: Hex.bytes("070000004041424344454647"),
            ad: Hex.bytes("50515253c0c1c2c3c4c5c6c7"), plaintext: Array(text.utf8))
        XCTAssertEqual(
            Hex.string(sealed),
            "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b"
                + "1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
                + "3ff4def08e4b7a9de576d26586cec64b6116" + "1ae10b594f09e26a7e902ecbd0600691")
    }

    /// RFC 8439 A.5: the AEAD decryption, and a flipped tag bit refused.
    func testOpenMatchesAppendixA5() {
        let key = Hex.bytes("1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0")
        let nonce = Hex.bytes("000000000102030405060708")
        let ad = Hex.bytes("f33388860000000000004e91")
        let sealed = Hex.bytes(
            "64a0861575861af460f062c79be643bd5e805cfd345cf389f108670ac76c8cb24c6cfc18755d43eea09ee94e382d26b0"
                + "bdb7b73c321b0100d4f03b7f355894cf332f830e710b97ce98c8a84abd0b948114ad176e008d33bd60f982b1ff37c855"
                + "9797a06ef4f0ef61c186324e2b3506383606907b6a7c02b0f9f6157b53c867e4b9166c767b804d46a59b5216cde7a4e9"
                + "9040c5a40433225ee282a1b0a06c523eaf4534d7f83fa1155b0047718cbc546a0d072b04b3564eea1b422273f548271a"
                + "0bb2316053fa76991955ebd63159434ecebb4e466dae5a1073a6727627097a1049e617d91d361094fa68f0ff77987130"
                + "305beaba2eda04df997b714d6c6f2c29a6ad5cb4022b02709b" + "eead9d67890cbb22392336fea1851f38")
        let text =
            "Internet-Drafts are draft documents valid for a maximum of six months and may be updated, replaced, "
            + "or obsoleted by other documents at any time. It is inappropriate to use Internet-Drafts as reference "
            + "material or to cite them other than as /\u{201C}work in progress./\u{201D}"
        XCTAssertEqual(ChaChaPolyReference.open(key: key, nonce: nonce, ad: ad, sealed: sealed), Array(text.utf8))
        var altered = sealed
        altered[altered.count - 1] ^= 0x01
        XCTAssertNil(ChaChaPolyReference.open(key: key, nonce: nonce, ad: ad, sealed: altered))
    }
}
