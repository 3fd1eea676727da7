/*
 * The initiator's side of the secure link (Docs/SECURITY.md) for loadgen: Noise IK
 * (Noise_IK_25519_ChaChaPoly_SHA256, prologue "ordersync.ik.v1") on OpenSSL's libcrypto, and the
 * transport framing (a header byte: 0x01 more, 0x02 rekey after, 0x04 control). Written from the
 * Noise specification (revision 34), nothing taken from the code it measures.
 */
#ifndef LOADGEN_NOISE_H
#define LOADGEN_NOISE_H

#include <stddef.h>
#include <stdint.h>

struct noise_cipher {
    unsigned char k[32];
    uint64_t n;
    void *ctx; /* EVP_CIPHER_CTX, keyed once per key */
};

struct noise_link {
    /* handshake */
    unsigned char ck[32], h[32], s_priv[32], s_pub[32], e_priv[32], e_pub[32], rs[32];
    struct noise_cipher hs;
    int hs_has_key;
    /* transport */
    struct noise_cipher send, recv;
    uint64_t sent, received;
};

/* The public key of a private X25519 key; 0 on success. */
int noise_public_key(const unsigned char priv[32], unsigned char pub[32]);

/* Starts an IK handshake toward the responder's static key `rs` and writes its first message
   (96 bytes: e, es, s, ss, an empty payload) into out. 0 on success. */
int noise_ik_start(struct noise_link *l, const unsigned char s_priv[32], const unsigned char rs[32],
                   const char *prologue, unsigned char out[96]);

/* Reads the responder's message (e, ee, se, payload): its payload into payload (at most cap
   bytes), its length returned; -1 when it does not decrypt. Splits into the transport ciphers. */
long noise_ik_finish(struct noise_link *l, const unsigned char *msg, size_t n, unsigned char *payload, size_t cap);

/* Seals one transport message (header byte + plaintext) into out (n + 17 bytes); rekeys the sending
   cipher after every `rekey_every`th message, with the 0x02 bit set on it. Returns its length. */
size_t noise_seal(struct noise_link *l, unsigned char header, const unsigned char *p, size_t n, unsigned char *out,
                  uint64_t rekey_every);

/* Opens one transport message in place: the plaintext (header byte first) starts at msg, its length
   returned; -1 when it does not decrypt. Rekeys the receiving cipher when its header says so. */
long noise_open(struct noise_link *l, unsigned char *msg, size_t n);

#endif
