/* Noise IK initiator and transport for loadgen (see loadgen_noise.h). Section numbers are the
   Noise specification's, revision 34. */
#include "loadgen_noise.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <string.h>

static void sha256(const unsigned char *a, size_t an, const unsigned char *b, size_t bn, unsigned char out[32]) {
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned int len = 32;
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    EVP_DigestUpdate(c, a, an);
    if (bn) EVP_DigestUpdate(c, b, bn);
    EVP_DigestFinal_ex(c, out, &len);
    EVP_MD_CTX_free(c);
}

/* HMAC-SHA256 (RFC 2104) of key (32 bytes) over a || b. */
static void hmac(const unsigned char key[32], const unsigned char *a, size_t an, const unsigned char *b, size_t bn,
                 unsigned char out[32]) {
    unsigned char ipad[64], opad[64], inner[32];
    memset(ipad, 0x36, 64);
    memset(opad, 0x5c, 64);
    for (int i = 0; i < 32; i++) { ipad[i] ^= key[i]; opad[i] ^= key[i]; }
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned int len = 32;
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    EVP_DigestUpdate(c, ipad, 64);
    if (an) EVP_DigestUpdate(c, a, an);
    if (bn) EVP_DigestUpdate(c, b, bn);
    EVP_DigestFinal_ex(c, inner, &len);
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    EVP_DigestUpdate(c, opad, 64);
    EVP_DigestUpdate(c, inner, 32);
    EVP_DigestFinal_ex(c, out, &len);
    EVP_MD_CTX_free(c);
}

/* HKDF of 4.3 with two outputs. */
static void hkdf2(const unsigned char ck[32], const unsigned char *ikm, size_t n, unsigned char o1[32], unsigned char o2[32]) {
    unsigned char temp[32], one = 1, two = 2;
    hmac(ck, ikm, n, NULL, 0, temp);
    hmac(temp, &one, 1, NULL, 0, o1);
    hmac(temp, o1, 32, &two, 1, o2);
}

static int dh(const unsigned char priv[32], const unsigned char pub[32], unsigned char out[32]) {
    EVP_PKEY *a = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv, 32);
    EVP_PKEY *b = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, pub, 32);
    EVP_PKEY_CTX *c = a && b ? EVP_PKEY_CTX_new(a, NULL) : NULL;
    size_t len = 32;
    int ok = c && EVP_PKEY_derive_init(c) > 0 && EVP_PKEY_derive_set_peer(c, b) > 0 && EVP_PKEY_derive(c, out, &len) > 0;
    EVP_PKEY_CTX_free(c);
    EVP_PKEY_free(a);
    EVP_PKEY_free(b);
    return ok ? 0 : -1;
}

int noise_public_key(const unsigned char priv[32], unsigned char pub[32]) {
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv, 32);
    size_t len = 32;
    int ok = k && EVP_PKEY_get_raw_public_key(k, pub, &len) > 0;
    EVP_PKEY_free(k);
    return ok ? 0 : -1;
}

static void cipher_key(struct noise_cipher *c, const unsigned char k[32]) {
    memcpy(c->k, k, 32);
    c->n = 0;
    if (!c->ctx) c->ctx = EVP_CIPHER_CTX_new();
}

/* 12.3: 32 bits of zeros, then the 64-bit counter little-endian. */
static void nonce(uint64_t n, unsigned char iv[12]) {
    memset(iv, 0, 4);
    for (int i = 0; i < 8; i++) iv[4 + i] = (unsigned char)(n >> (8 * i));
}

static size_t encrypt(struct noise_cipher *c, uint64_t n, const unsigned char *ad, size_t adn, const unsigned char *p,
                      size_t pn, unsigned char *out) {
    unsigned char iv[12];
    int len = 0;
    nonce(n, iv);
    EVP_CIPHER_CTX *x = c->ctx;
    EVP_EncryptInit_ex(x, EVP_chacha20_poly1305(), NULL, c->k, iv);
    if (adn) EVP_EncryptUpdate(x, NULL, &len, ad, (int)adn);
    if (pn) EVP_EncryptUpdate(x, out, &len, p, (int)pn);
    EVP_EncryptFinal_ex(x, out + pn, &len);
    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, 16, out + pn);
    return pn + 16;
}

static long decrypt(struct noise_cipher *c, uint64_t n, const unsigned char *ad, size_t adn, const unsigned char *m,
                    size_t mn, unsigned char *out) {
    unsigned char iv[12], tag[16];
    int len = 0;
    if (mn < 16) return -1;
    size_t pn = mn - 16;
    memcpy(tag, m + pn, 16);
    nonce(n, iv);
    EVP_CIPHER_CTX *x = c->ctx;
    EVP_DecryptInit_ex(x, EVP_chacha20_poly1305(), NULL, c->k, iv);
    if (adn) EVP_DecryptUpdate(x, NULL, &len, ad, (int)adn);
    if (pn) EVP_DecryptUpdate(x, out, &len, m, (int)pn);
    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, 16, tag);
    if (EVP_DecryptFinal_ex(x, out + pn, &len) <= 0) return -1;
    return (long)pn;
}

/* 11.3 Rekey: k = the first 32 bytes of ENCRYPT(k, 2^64-1, "", 32 zeros); the counter is kept. */
static void rekey(struct noise_cipher *c) {
    unsigned char zeros[32] = {0}, out[48];
    encrypt(c, UINT64_MAX, NULL, 0, zeros, 32, out);
    memcpy(c->k, out, 32);
}

static void mix_hash(struct noise_link *l, const unsigned char *d, size_t n) { sha256(l->h, 32, d, n, l->h); }

static void mix_key(struct noise_link *l, const unsigned char ikm[32]) {
    unsigned char k[32];
    hkdf2(l->ck, ikm, 32, l->ck, k);
    cipher_key(&l->hs, k);
    l->hs_has_key = 1;
}

int noise_ik_start(struct noise_link *l, const unsigned char s_priv[32], const unsigned char rs[32],
                   const char *prologue, unsigned char out[96]) {
    static const char name[] = "Noise_IK_25519_ChaChaPoly_SHA256"; /* exactly 32 bytes: h = name */
    unsigned char shared[32];
    memset(l, 0, sizeof *l);
    memcpy(l->h, name, 32);
    memcpy(l->ck, l->h, 32);
    mix_hash(l, (const unsigned char *)prologue, strlen(prologue));
    memcpy(l->rs, rs, 32);
    mix_hash(l, rs, 32); /* pre-message: <- s */
    memcpy(l->s_priv, s_priv, 32);
    if (noise_public_key(s_priv, l->s_pub) != 0) return -1;
    /* -> e */
    if (RAND_bytes(l->e_priv, 32) != 1 || noise_public_key(l->e_priv, l->e_pub) != 0) return -1;
    memcpy(out, l->e_pub, 32);
    mix_hash(l, l->e_pub, 32);
    /* es */
    if (dh(l->e_priv, rs, shared) != 0) return -1;
    mix_key(l, shared);
    /* s: EncryptAndHash */
    encrypt(&l->hs, l->hs.n++, l->h, 32, l->s_pub, 32, out + 32);
    mix_hash(l, out + 32, 48);
    /* ss */
    if (dh(l->s_priv, rs, shared) != 0) return -1;
    mix_key(l, shared);
    /* empty payload */
    encrypt(&l->hs, l->hs.n++, l->h, 32, NULL, 0, out + 80);
    mix_hash(l, out + 80, 16);
    return 0;
}

long noise_ik_finish(struct noise_link *l, const unsigned char *msg, size_t n, unsigned char *payload, size_t cap) {
    unsigned char shared[32], k1[32], k2[32];
    if (n < 48 || n - 48 > cap) return -1;
    /* <- e */
    mix_hash(l, msg, 32);
    /* ee */
    if (dh(l->e_priv, msg, shared) != 0) return -1;
    mix_key(l, shared);
    /* se (the initiator's static with the responder's ephemeral) */
    if (dh(l->s_priv, msg, shared) != 0) return -1;
    mix_key(l, shared);
    long pn = decrypt(&l->hs, l->hs.n++, l->h, 32, msg + 32, n - 32, payload);
    if (pn < 0) return -1;
    mix_hash(l, msg + 32, n - 32);
    /* Split (5.2): the initiator sends with the first key. */
    hkdf2(l->ck, NULL, 0, k1, k2);
    cipher_key(&l->send, k1);
    cipher_key(&l->recv, k2);
    EVP_CIPHER_CTX_free(l->hs.ctx);
    l->hs.ctx = NULL;
    return pn;
}

size_t noise_seal(struct noise_link *l, unsigned char header, const unsigned char *p, size_t n, unsigned char *out,
                  uint64_t rekey_every) {
    unsigned char plain[65536];
    l->sent++;
    int rk = rekey_every && l->sent % rekey_every == 0;
    plain[0] = (unsigned char)(header | (rk ? 0x02 : 0));
    memcpy(plain + 1, p, n);
    size_t m = encrypt(&l->send, l->send.n++, NULL, 0, plain, n + 1, out);
    if (rk) rekey(&l->send);
    return m;
}

long noise_open(struct noise_link *l, unsigned char *msg, size_t n) {
    unsigned char plain[65536];
    if (n > sizeof plain + 16) return -1;
    long pn = decrypt(&l->recv, l->recv.n++, NULL, 0, msg, n, plain);
    if (pn < 1) return -1;
    l->received++;
    memcpy(msg, plain, (size_t)pn);
    if (plain[0] & 0x02) rekey(&l->recv);
    return pn;
}
