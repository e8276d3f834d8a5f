/* fuzz_snap_manifest: a snapshot manifest as the object store, a crash or
 * a hand may give it. Any input parses or is refused, never read past its
 * end or trusted for an allocation; what parses is canonical (it encodes
 * back to the same bytes) and describes a volume the store can restore:
 * chunk numbers ascending, inside the volume, at most one per chunk. The
 * header-only parse of the same bytes agrees. */
#include "spx.h"

#include "vol/snap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spx_snap_manifest m, h;
	struct spx_buf b = SPX_BUF_INIT;

	if (spx_snap_manifest_parse(data, size, 0, &m) == 0) {
		uint64_t nch = (m.size + m.chunk - 1) / m.chunk;

		if (!m.size || m.size > SPX_VOL_SIZE_MAX || m.chunk != SPX_SNAP_CHUNK ||
		    m.count > nch || !spx_snap_id_valid(m.id) ||
		    !spx_vol_id_valid(m.volume) ||
		    (*m.parent && !spx_snap_id_valid(m.parent)))
			abort();
		for (uint64_t i = 0; i < m.count; i++)
			if (m.v[i].idx >= nch || (i && m.v[i].idx <= m.v[i - 1].idx))
				abort();
		spx_snap_manifest_encode(&m, &b);
		if (b.len != size || memcmp(b.p, data, size))
			abort();
		if (spx_snap_manifest_parse(data, size, SPX_SNAP_HEADER, &h) ||
		    h.count != m.count || h.size != m.size || strcmp(h.id, m.id))
			abort();
		spx_snap_manifest_release(&h);
		spx_buf_release(&b);
		spx_snap_manifest_release(&m);
	}
	spx_error_clear();
	return 0;
}
