//! Reading and writing `.npy` files: header parsing by `npyz`, validated here so that no
//! file, however malformed, can make ntile panic or allocate beyond the file's size.

use std::io::Write as _;
use std::path::Path;

use crate::error::CliError;

/// An array read from a `.npy` file, converted to f32.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// Shape (C order).
    pub shape: Vec<u64>,
    /// Elements, row-major.
    pub data: Vec<f32>,
    /// The file's numpy type string (e.g. `<f4`).
    pub descr: String,
}

/// Read a float32 (or float16) `.npy` file.
pub fn read_f32(path: &Path) -> Result<Array, CliError> {
    let what = path.display();
    let bytes = std::fs::read(path).map_err(|e| CliError::usage(format!("cannot read {what}: {e}")))?;
    parse_f32(&bytes).map_err(|e| CliError::usage(format!("{what}: {e}")))
}

/// Parse the bytes of a `.npy` file holding float32 or float16 values.
pub fn parse_f32(bytes: &[u8]) -> Result<Array, String> {
    let mut cursor = std::io::Cursor::new(bytes);
    let header = npyz::NpyHeader::from_reader(&mut cursor).map_err(|e| format!("not a valid .npy file ({e})"))?;
    let payload = bytes.get(cursor.position() as usize..).unwrap_or_default();
    let npy = npyz::NpyFile::with_header(header, payload);
    let shape = npy.shape().to_vec();
    let descr = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => return Err(format!("holds a structured or nested dtype ({}); expected float32", other.descr())),
    };
    if npy.order() == npyz::Order::Fortran {
        return Err("Fortran-ordered arrays are not supported; save np.ascontiguousarray(x)".into());
    }
    let item = match descr.as_str() {
        "<f4" => 4,
        "<f2" => 2,
        ">f4" | ">f2" => return Err(format!("big-endian data ({descr}) is not supported; save x.astype('<f4')")),
        "<f8" => return Err("holds float64; save it as float32 (x.astype(np.float32))".into()),
        other => return Err(format!("holds dtype {other}; expected float32 (<f4) or float16 (<f2)")),
    };
    let len =
        shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or_else(|| format!("shape {shape:?} is too large"))?;
    let need = len.checked_mul(item).ok_or_else(|| format!("shape {shape:?} is too large"))?;
    if need > payload.len() as u64 {
        return Err(format!("truncated: shape {shape:?} needs {need} data bytes but the file has {}", payload.len()));
    }
    let data = if item == 4 {
        npy.into_vec::<f32>().map_err(|e| format!("bad data ({e})"))?
    } else {
        npy.into_vec::<half::f16>().map_err(|e| format!("bad data ({e})"))?.into_iter().map(half::f16::to_f32).collect()
    };
    if data.len() as u64 != len {
        return Err(format!("holds {} elements but its shape {shape:?} needs {len}", data.len()));
    }
    Ok(Array { shape, data, descr })
}

/// How an output array is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutKind {
    /// `<f4`.
    F32,
    /// `<f2`.
    F16,
    /// `<u2` bit patterns (bf16).
    U16Bits,
    /// `|u1` bit patterns (fp8).
    U8Bits,
}

/// Serialize raw little-endian element bytes as an `.npy` file.
pub fn to_npy_bytes(shape: &[u64], kind: OutKind, data: &[u8]) -> Result<Vec<u8>, CliError> {
    let mut out = Vec::with_capacity(data.len() + 128);
    let written = match kind {
        OutKind::F32 => write_array::<f32, 4>(&mut out, shape, data, f32::from_le_bytes),
        OutKind::F16 => write_array::<half::f16, 2>(&mut out, shape, data, half::f16::from_le_bytes),
        OutKind::U16Bits => write_array::<u16, 2>(&mut out, shape, data, u16::from_le_bytes),
        OutKind::U8Bits => write_array::<u8, 1>(&mut out, shape, data, |b: [u8; 1]| b[0]),
    };
    written.map_err(|e| CliError::internal(format!("npy encoding failed: {e}")))?;
    Ok(out)
}

fn write_array<T: npyz::AutoSerialize, const N: usize>(
    out: &mut Vec<u8>,
    shape: &[u64],
    data: &[u8],
    conv: impl Fn([u8; N]) -> T,
) -> std::io::Result<()> {
    use npyz::WriterBuilder as _;
    let mut w = npyz::WriteOptions::new().default_dtype().shape(shape).writer(out).begin_nd()?;
    for chunk in data.chunks_exact(N) {
        let mut b = [0u8; N];
        b.copy_from_slice(chunk);
        w.push(&conv(b))?;
    }
    w.finish()
}

/// Write `bytes` to `path` atomically: a temporary file beside it, then a rename.
///
/// A path that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a pipe) is
/// written in place: renaming over it would replace the device, not write to it. Any failed
/// write is an error (exit 2) naming the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let written = std::fs::OpenOptions::new().write(true).open(path).and_then(|mut f| {
            f.write_all(bytes)?;
            f.flush()
        });
        return written.map_err(|e| CliError::usage(format!("cannot write {}: {e}", path.display())));
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| CliError::usage(format!("{} is not a file path", path.display())))?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        CliError::usage(format!("cannot write {}: {e}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_round_trip_and_errors() {
        let data: Vec<u8> = [1.5f32, -2.0, 3.25, 0.0, 7.0, 8.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let bytes = to_npy_bytes(&[2, 3], OutKind::F32, &data).unwrap();
        let a = parse_f32(&bytes).unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.data, vec![1.5, -2.0, 3.25, 0.0, 7.0, 8.0]);
        let e = parse_f32(&bytes[..bytes.len() - 3]).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
        assert!(parse_f32(b"hello").unwrap_err().contains("not a valid .npy"));
        let u16s = to_npy_bytes(&[2], OutKind::U16Bits, &[0, 0x3f, 0, 0x40]).unwrap();
        assert!(parse_f32(&u16s).unwrap_err().contains("<u2"));
    }

    #[test]
    fn f16_reads_as_f32() {
        let data: Vec<u8> =
            [half::f16::from_f32(0.5), half::f16::from_f32(-3.0)].iter().flat_map(|v| v.to_le_bytes()).collect();
        let bytes = to_npy_bytes(&[2], OutKind::F16, &data).unwrap();
        let a = parse_f32(&bytes).unwrap();
        assert_eq!(a.descr, "<f2");
        assert_eq!(a.data, vec![0.5, -3.0]);
    }

    #[test]
    fn huge_shapes_are_refused_without_allocating() {
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let padded = format!("{header:<118}\n");
        bytes.extend((padded.len() as u16).to_le_bytes());
        bytes.extend(padded.as_bytes());
        let err = parse_f32(&bytes).unwrap_err();
        assert!(err.contains("too large") || err.contains("truncated"), "{err}");
    }
}
