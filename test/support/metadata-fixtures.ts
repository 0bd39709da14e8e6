import sharp from "sharp";

/**
 * Phone-like fixtures for the metadata policy: a noisy photo with EXIF as a phone writes it (make,
 * model, serials, capture date, owner, a GPS position), an XMP packet with a location (exif:GPS*, photoshop:City,
 * Iptc4xmpCore:Location), a rotated orientation and an embedded ICC profile (Display P3). Built with sharp, so the
 * bytes are the same every run.
 */

export const GPS = { latitude: 48.8584, longitude: 2.2945 };

export const PHONE_XMP = `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:exif="http://ns.adobe.com/exif/1.0/"
    xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"
    xmlns:Iptc4xmpCore="http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    exif:GPSLatitude="48,51.504N"
    exif:GPSLongitude="2,17.67E"
    photoshop:City="Paris"
    photoshop:State="Ile-de-France"
    photoshop:Country="France"
    Iptc4xmpCore:Location="Champ de Mars">
   <dc:creator><rdf:Seq><rdf:li>Alice Example</rdf:li></rdf:Seq></dc:creator>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`;

/** EXIF as sharp's withExif takes it: IFD0 (the image), IFD2 (the Exif sub-IFD), IFD3 (GPS). */
export const PHONE_EXIF = {
  IFD0: { Make: "Examplephone", Model: "EP 15 Pro", Artist: "Alice Example", DateTime: "2026:11:02 14:03:27", Software: "17.1" },
  IFD2: { DateTimeOriginal: "2026:11:02 14:03:27", BodySerialNumber: "SN123456789", LensSerialNumber: "LSN987654" },
  IFD3: {
    GPSLatitudeRef: "N",
    GPSLatitude: "48/1 51/1 3024/100",
    GPSLongitudeRef: "E",
    GPSLongitude: "2/1 17/1 4020/100",
    GPSAltitude: "35/1",
  },
};

function noise(width: number, height: number, seed = 4242): Buffer {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    // smooth-ish gradients with noise: compresses like a photo
    raw[i] = ((i % (width * 3)) / 12 + ((seed >> 16) & 0x3f)) & 0xff;
  }
  return raw;
}

export type PhoneFormat = "jpeg" | "png" | "webp" | "avif";

/** A phone-like photo: EXIF with GPS, XMP with a location, orientation 6 (rotate 90° to view), a Display P3 profile. */
export async function phonePhoto(format: PhoneFormat, width = 640, height = 480, options: { orientation?: number } = {}): Promise<Uint8Array> {
  const base = sharp(noise(width, height), { raw: { width, height, channels: 3 } })
    .withIccProfile("p3")
    .withExif(PHONE_EXIF)
    .withXmp(PHONE_XMP)
    .withMetadata({ orientation: options.orientation ?? 6 });
  const out =
    format === "jpeg"
      ? base.jpeg({ quality: 90 })
      : format === "png"
        ? base.png()
        : format === "webp"
          ? base.webp({ quality: 90 })
          : base.avif({ quality: 60 });
  return new Uint8Array(await out.toBuffer());
}
