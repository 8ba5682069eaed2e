"""The words that introduce a secret or say what kind of code a number is, in the
languages users write to an assistant in.

A cue's vocabulary cannot be derived; it is kept here, per kind, so adding a language is
adding words, not code.  Words are matched lower case; ``alternation`` builds the RE2
alternation of a list (longest first, so "pin code" wins over "pin").
"""

from __future__ import annotations

PASSWORD_CUES = (
    "password", "passwords", "passwd", "pwd", "pw", "p/w", "pword", "passphrase", "pass",
    "login", "log-in", "sign-in", "creds", "credentials", "wifi key", "wi-fi key",
    "master key", "seed phrase", "recovery phrase", "mnemonic",
    "passwort", "kennwort", "mot de passe", "mdp", "contraseña", "contrasena", "senha",
    "hasło", "haslo", "wachtwoord", "lösenord", "losenord", "adgangskode", "salasana",
    "parola d'ordine", "パスワード")
CODE_CUES = (
    "pin", "pins", "pin code", "pin number", "passcode", "pass code", "code", "codes",
    "combination", "combo", "otp", "2fa", "mfa", "tan", "puk", "cvv", "cvv2", "cvc",
    "cvc2", "csc", "cv2", "cid", "ccv", "authenticator", "digicode", "clave", "código",
    "codigo", "codice", "kod", "koden", "kode", "combinación", "combinacion",
    "combinazione", "geheimzahl", "prüfnummer", "prüfziffer", "kartenprüfnummer",
    "cryptogramme", "暗証番号", "認証コード", "確認コード", "safe", "key safe", "lockbox",
    "keybox", "padlock", "lock")
# German and Dutch glue a code's kind to it ("Bestätigungscode", "Türcode")
CODE_SUFFIXES = ("code", "kode", "codes", "kod", "koden", "koder")
# and a password's kind ("Routerpasswort", "engångslösenord")
PASSWORD_SUFFIXES = ("passwort", "password", "kennwort", "lösenord", "losenord",
                     "wachtwoord", "salasana", "hasło", "haslo")
BANK_CUES = (
    "account", "account number", "account no", "account #", "bank account", "acct",
    "acct no", "a/c", "sort code", "routing", "routing number", "aba", "bsb",
    "transit number", "kontonummer", "konto", "blz", "bankleitzahl", "numéro de compte",
    "rib", "número de cuenta", "numero de cuenta", "cuenta", "ccc", "numero di conto",
    "conto", "numer konta", "rekeningnummer", "clearingnummer", "口座番号")
CARD_CUES = ("card", "card number", "card no", "credit card", "debit card", "visa",
             "mastercard", "amex", "karte", "kreditkarte", "carte", "numéro de carte",
             "tarjeta", "cartão", "carta", "karta", "kaart")
IBAN_CUES = ("iban",)
GOV_CUES = (
    "ssn", "social security", "social security number", "social", "sin",
    "social insurance number", "passport", "passport number", "passport no",
    "driver's license", "drivers license", "driver license", "driver's licence",
    "driving licence", "driving license", "licence number", "license number",
    "national insurance", "national insurance number", "ni number", "ni no", "nino",
    "national id", "national identity", "id number", "id card", "identity card",
    "tax id", "tax number", "tax file number", "tfn", "tin", "ein", "itin", "ird",
    "nhs number", "medicare number", "aadhaar", "aadhar", "pan", "dni", "nie", "nif",
    "cpf", "curp", "rfc", "bsn", "burgerservicenummer", "personnummer", "pesel",
    "cedula", "cédula", "health card", "steuer-id", "steuerid", "steuernummer",
    "steueridentifikationsnummer", "personalausweis", "personalausweisnummer",
    "reisepass", "reisepassnummer", "codice fiscale", "passaporto", "carta d'identità",
    "passeport", "numéro de sécurité sociale", "sécurité sociale", "pasaporte",
    "passaporte", "paszport", "dowód osobisty", "マイナンバー")
KEY_CUES = (
    "api key", "api-key", "api_key", "apikey", "api keys", "api token", "api secret",
    "access token", "auth token", "refresh token", "bearer", "token", "tokens",
    "secret", "secret key", "client secret", "app secret", "webhook secret",
    "signing secret", "consumer secret", "private key", "access key", "access key id",
    "secret access key", "key", "keys", "license key", "licence key", "product key",
    "bot token")

# a code is a one-time code when these say so; the weak ones only for a bare "code"
OTP_STRONG = frozenset(
    "one-time onetime otp verification verify verifying 2fa two-factor twofactor 2-step "
    "two-step mfa authenticator authentication tan backup recovery "
    "verificación verificacion vérification bestätigungscode bestätigung bestätigungs "
    "verifica verifizierung weryfikacyjny verificatiecode einmal jednorazowy "
    "認証コード 確認コード".split())
OTP_WEAK = frozenset(
    "login log-in sign-in signin texted text sms sent emailed received magic says said "
    "your confirmation 6-digit six-digit".split())
# a code of a door, lock, alarm or device: a pin whatever else surrounds it
PHYSICAL = frozenset(
    "door gate garage locker lock alarm keypad safe entry access building buzzer lockbox "
    "keybox padlock storage mailbox house apartment flat office gym shed unit "
    "intercom bike suitcase vault cabinet phone laptop tablet screen sim puk "
    "digicode porte portail puerta portón candado taquilla cancello lucchetto "
    "armadietto alarme alarma allarme tresor tür türcode tor schloss schließfach coffre "
    "cofre portão kłódka szafka brama drzwi".split())
# codes that are public facts, kept: a zip code, an error code, a promo code
PUBLIC_CODE = frozenset(
    "zip postal post postcode area country dial dialing dialling error status exit "
    "return promo promotional promotion discount coupon voucher referral gift invite "
    "invitation tracking product item sku bar barcode qr source airport airline flight "
    "booking reservation reference ref course class module dress colour color tax hs "
    "icd cpt diagnosis lot batch model part style station route bus program css html "
    "python morse cheat game swift bic iata currency language sort zipcode "
    "postleitzahl plz".split())
CARD_WORDS = frozenset(
    "card visa mastercard amex credit debit back behind cvv cvc karte kreditkarte carte "
    "tarjeta".split())
# words that can follow "password is" without being a password: grammar, and words
# that describe a password rather than state it
NOT_A_VALUE = frozenset(
    "a an the my your his her our their its this that these those it he she they we you i "
    "me him them not no never none nothing also too very so still just really always "
    "same different wrong right incorrect invalid weak strong long short secure "
    "safe easy hard simple complex new old temporary default blank empty case sensitive "
    "here there somewhere written saved stored in on at for with from by of to and or but "
    "if when what which who where how why because than then be been being is was are were "
    "will would should could can may might must do does did have has had set reset "
    "required needed changed updated expired locked something anything everything ok "
    "okay fine good bad secret private manager".split())


def alternation(words: tuple[str, ...]) -> str:
    """An RE2 alternation of ``words``, longest first, spaces matching any whitespace."""
    escaped = [w.replace(".", r"\.").replace("#", r"\#").replace(" ", r"\s+")
               for w in sorted(set(words), key=len, reverse=True)]
    return "(?:" + "|".join(escaped) + ")"
