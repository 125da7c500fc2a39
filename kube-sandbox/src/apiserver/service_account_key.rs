//! The cluster's service-account signing key: RSA 2048, as kubeadm's `sa.key`, so tokens are
//! RS256 JWTs with kube-apiserver's key id and verify against the published JWKS.
//!
//! ring signs and verifies RSA but does not generate keys; the primes come from a plain
//! Miller-Rabin search over `num_bigint` (already in the tree through rcgen's x509 parser).
//! The key guards sandbox tokens only, never anything outside a test cluster.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use num_bigint::BigUint;
use ring::rand::{SecureRandom, SystemRandom};
use ring::rsa::{KeyPair, KeyPairComponents, PublicKeyComponents};
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_SHA256, RsaPublicKeyComponents};
use serde_json::{Value, json};

/// Bits of the modulus; kubeadm and kube's own tests use 2048.
const MODULUS_BITS: usize = 2048;
/// The public exponent every RSA key of the ecosystem uses.
const PUBLIC_EXPONENT: u32 = 65_537;
/// Miller-Rabin rounds per 1024-bit prime: FIPS 186-5 table B.1 asks for 5 at this size.
const MILLER_RABIN_ROUNDS: usize = 8;

/// An RSA key pair that signs service-account tokens.
pub struct ServiceAccountKey {
    pair: KeyPair,
    modulus: Vec<u8>,
    exponent: Vec<u8>,
    key_id: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountKey")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// Why a key could not be made.
#[derive(Debug, thiserror::Error)]
#[error("service-account key: {0}")]
pub struct KeyError(String);

impl KeyError {
    /// An error with this message.
    pub fn new(message: String) -> KeyError {
        KeyError(message)
    }
}

impl ServiceAccountKey {
    /// A fresh random key.
    pub fn generate() -> Result<ServiceAccountKey, KeyError> {
        let rng = SystemRandom::new();
        let e = BigUint::from(PUBLIC_EXPONENT);
        let one = BigUint::from(1u32);
        loop {
            let a = random_prime(&rng, MODULUS_BITS / 2)?;
            let b = random_prime(&rng, MODULUS_BITS / 2)?;
            if a == b {
                continue;
            }
            // ring's CRT wants q < p.
            let (p, q) = if a > b { (a, b) } else { (b, a) };
            let n = &p * &q;
            if n.bits() as usize != MODULUS_BITS {
                continue;
            }
            let (p1, q1) = (&p - &one, &q - &one);
            // d modulo the totient, as Go's crypto/rsa `GenerateKey` computes it.
            let Some(d) = e.modinv(&(&p1 * &q1)) else {
                continue;
            };
            let Some(q_inv) = q.modinv(&p) else { continue };
            let (dp, dq) = (&d % &p1, &d % &q1);
            let modulus = n.to_bytes_be();
            let exponent = e.to_bytes_be();
            let components = KeyPairComponents {
                public_key: PublicKeyComponents {
                    n: modulus.clone(),
                    e: exponent.clone(),
                },
                d: d.to_bytes_be(),
                p: p.to_bytes_be(),
                q: q.to_bytes_be(),
                dP: dp.to_bytes_be(),
                dQ: dq.to_bytes_be(),
                qInv: q_inv.to_bytes_be(),
            };
            let pair = KeyPair::from_components(&components)
                .map_err(|e| KeyError(format!("ring refused the generated key: {e}")))?;
            let key_id = key_id(&modulus, &exponent);
            return Ok(ServiceAccountKey {
                pair,
                modulus,
                exponent,
                key_id,
                rng,
            });
        }
    }

    /// The key id kube-apiserver puts in each token's header.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// `header.payload.signature` for the given claims, with kube's header: `alg` and `kid`,
    /// no `typ` (kubernetes `pkg/serviceaccount/jwt.go`, `JWTTokenGenerator`: go-jose's
    /// signer without options).
    pub fn sign(&self, claims: &Value) -> Result<String, KeyError> {
        let header = json!({"alg": "RS256", "kid": self.key_id});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut signature = vec![0; self.pair.public().modulus_len()];
        self.pair
            .sign(
                &RSA_PKCS1_SHA256,
                &self.rng,
                signing_input.as_bytes(),
                &mut signature,
            )
            .map_err(|_| KeyError("signing failed".into()))?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }

    /// The claims of a token this key signed, if its header and signature are right.
    pub fn verify(&self, token: &str) -> Option<Value> {
        let mut parts = token.split('.');
        let (header_part, payload, signature) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header_part).ok()?).ok()?;
        if header.get("alg")?.as_str()? != "RS256" {
            return None;
        }
        let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
        let signing_input = format!("{header_part}.{payload}");
        RsaPublicKeyComponents {
            n: &self.modulus,
            e: &self.exponent,
        }
        .verify(
            &RSA_PKCS1_2048_8192_SHA256,
            signing_input.as_bytes(),
            &signature,
        )
        .ok()?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
    }

    /// The JSON Web Key Set kube-apiserver serves at `/openid/v1/jwks`
    /// (`pkg/serviceaccount/openidmetadata.go`, `publicJWKSFromKeys`).
    pub fn jwks(&self) -> Value {
        json!({"keys": [{
            "use": "sig",
            "kty": "RSA",
            "kid": self.key_id,
            "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(&self.modulus),
            "e": URL_SAFE_NO_PAD.encode(&self.exponent),
        }]})
    }
}

/// The issuer every sandbox token names, kube-apiserver's default `--service-account-issuer`.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The OpenID discovery document at `/.well-known/openid-configuration`
/// (`pkg/serviceaccount/openidmetadata.go`, `NewOpenIDMetadataProvider`: the JWKS URI is the
/// issuer's when `--service-account-jwks-uri` is not set).
pub fn openid_configuration() -> Value {
    json!({
        "issuer": ISSUER,
        "jwks_uri": format!("{ISSUER}/openid/v1/jwks"),
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    })
}

/// kube's key id: base64url of the SHA-256 of the public key's PKIX DER
/// (`pkg/serviceaccount/jwt.go`, `keyIDFromPublicKey`).
pub fn key_id(modulus: &[u8], exponent: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, &pkix_public_key(modulus, exponent));
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// SubjectPublicKeyInfo { rsaEncryption, BIT STRING { RSAPublicKey { n, e } } }, as Go's
/// `x509.MarshalPKIXPublicKey` writes it for an RSA key.
pub fn pkix_public_key(modulus: &[u8], exponent: &[u8]) -> Vec<u8> {
    // OID 1.2.840.113549.1.1.1 followed by NULL parameters.
    const RSA_ENCRYPTION: &[u8] = &[
        0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
    ];
    let mut rsa_public_key = der_integer(modulus);
    rsa_public_key.extend(der_integer(exponent));
    let rsa_public_key = der(0x30, &rsa_public_key);
    let mut bit_string = vec![0u8];
    bit_string.extend(rsa_public_key);
    let mut info = RSA_ENCRYPTION.to_vec();
    info.extend(der(0x03, &bit_string));
    der(0x30, &info)
}

/// A DER INTEGER of an unsigned big-endian value.
fn der_integer(value: &[u8]) -> Vec<u8> {
    let start = value.iter().position(|b| *b != 0).unwrap_or(value.len());
    let mut body = value[start..].to_vec();
    if body.first().is_none_or(|b| b & 0x80 != 0) {
        body.insert(0, 0);
    }
    der(0x02, &body)
}

/// A DER TLV.
fn der(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = body.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(body);
    out
}

/// A random prime of exactly `bits` bits whose top two bits are set (so two of them make a
/// modulus of twice the bits) and for which `p - 1` is prime to the public exponent.
fn random_prime(rng: &SystemRandom, bits: usize) -> Result<BigUint, KeyError> {
    let small = small_primes(2_000);
    let e = BigUint::from(PUBLIC_EXPONENT);
    let one = BigUint::from(1u32);
    let mut bytes = vec![0u8; bits / 8];
    loop {
        rng.fill(&mut bytes)
            .map_err(|_| KeyError("no randomness".into()))?;
        bytes[0] |= 0xc0;
        if let Some(last) = bytes.last_mut() {
            *last |= 1;
        }
        let candidate = BigUint::from_bytes_be(&bytes);
        if small
            .iter()
            .any(|p| (&candidate % *p).bits() == 0 && candidate != BigUint::from(*p))
        {
            continue;
        }
        if ((&candidate - &one) % &e).bits() == 0 {
            continue;
        }
        if is_probable_prime(rng, &candidate, MILLER_RABIN_ROUNDS)? {
            return Ok(candidate);
        }
    }
}

/// Miller-Rabin with random bases.
fn is_probable_prime(rng: &SystemRandom, n: &BigUint, rounds: usize) -> Result<bool, KeyError> {
    let one = BigUint::from(1u32);
    let two = BigUint::from(2u32);
    if *n < BigUint::from(4u32) {
        return Ok(*n == two || *n == BigUint::from(3u32));
    }
    let n1 = n - &one;
    let s = n1.trailing_zeros().unwrap_or(0);
    let d = &n1 >> s;
    let mut bytes = vec![0u8; n.to_bytes_be().len()];
    for _ in 0..rounds {
        rng.fill(&mut bytes)
            .map_err(|_| KeyError("no randomness".into()))?;
        // A base in [2, n - 2].
        let a = BigUint::from_bytes_be(&bytes) % (n - BigUint::from(3u32)) + &two;
        let mut x = a.modpow(&d, n);
        if x == one || x == n1 {
            continue;
        }
        let mut composite = true;
        for _ in 1..s {
            x = x.modpow(&two, n);
            if x == n1 {
                composite = false;
                break;
            }
        }
        if composite {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Primes below `limit`, by the sieve of Eratosthenes.
fn small_primes(limit: u32) -> Vec<u32> {
    let mut composite = vec![false; limit as usize];
    let mut primes = Vec::new();
    for i in 2..limit {
        if !composite[i as usize] {
            primes.push(i);
            let mut j = i * i;
            while j < limit {
                composite[j as usize] = true;
                j += i;
            }
        }
    }
    primes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miller_rabin_table() {
        let rng = SystemRandom::new();
        for (n, prime) in [
            (2u64, true),
            (3, true),
            (4, false),
            (97, true),
            (561, false), // Carmichael
            (7_919, true),
            (1_000_000_007, true),
            (1_000_000_007 * 3, false),
            (2_147_483_647, true),  // 2^31 - 1
            (3_215_031_751, false), // strong pseudoprime to bases 2, 3, 5, 7
        ] {
            assert_eq!(
                is_probable_prime(&rng, &BigUint::from(n), 16).ok(),
                Some(prime),
                "{n}"
            );
        }
    }

    #[test]
    fn der_integer_table() {
        for (value, der) in [
            (vec![0x01, 0x00, 0x01], vec![0x02, 0x03, 0x01, 0x00, 0x01]),
            (vec![0x80], vec![0x02, 0x02, 0x00, 0x80]),
            (vec![0x00, 0x00, 0x7f], vec![0x02, 0x01, 0x7f]),
        ] {
            assert_eq!(der_integer(&value), der);
        }
        assert_eq!(&der(0x04, &[0; 200])[..3], &[0x04, 0x81, 200]);
        assert_eq!(&der(0x04, &[0; 300])[..4], &[0x04, 0x82, 0x01, 0x2c]);
    }

    #[test]
    fn a_generated_key_signs_and_verifies_and_refuses_a_changed_token() {
        let key = ServiceAccountKey::generate().expect("key");
        let token = key
            .sign(&json!({"sub": "system:serviceaccount:a:b"}))
            .expect("sign");
        assert_eq!(
            key.verify(&token)
                .and_then(|c| c["sub"].as_str().map(String::from)),
            Some("system:serviceaccount:a:b".into())
        );
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(r#"{"sub":"system:serviceaccount:a:admin"}"#);
        parts[1] = &forged;
        assert!(key.verify(&parts.join(".")).is_none());
        let other = ServiceAccountKey::generate().expect("key");
        assert!(other.verify(&token).is_none());
        assert_ne!(key.key_id(), other.key_id());
    }
}
