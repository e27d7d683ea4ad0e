#!/bin/sh
# tls-certs.sh DIR -- the certificates test_tls.c uses, made with Debian's
# openssl into DIR (P-256 keys, quick to make):
#   ca.pem ca.key        the test CA
#   server.pem/.key      the server, for DNS:localhost and IP:127.0.0.1
#   expired.pem/.key     the same names, by the same CA, expired yesterday
#   other.pem/.key       the same names, by another CA (other-ca.pem)
#   client.pem/.key      a handler's certificate, by the test CA
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
	-out "$1" 2>/dev/null; }
ca() { # name CN
	key "$1.key"
	openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 30 \
		-subj "/CN=$2" 2>/dev/null
}
cert() { # name CA-name CN days ext
	key "$1.key"
	openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$3" 2>/dev/null
	printf '%s\n' "$5" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" \
		-CAcreateserial -out "$1.pem" -days "$4" -extfile "$1.ext" \
		2>/dev/null
	rm -f "$1.csr" "$1.ext"
}
san='subjectAltName=DNS:localhost,IP:127.0.0.1'
ca ca "cxlpool test CA"
ca other-ca "another CA"
cert server ca localhost 30 "$san"
cert expired ca localhost -1 "$san"
cert other other-ca localhost 30 "$san"
cert client ca "handler-1" 30 "extendedKeyUsage=clientAuth"
chmod 600 ./*.key
