"""`language._simplified_face`: choosing the Simplified Chinese face of a font file."""

from PIL import ImageFont

from geoeval.suites.maptab.generator import language


class _NamelessFont:
    """A font whose name table gives no family (Pillow's `getname()` then says None)."""

    def getname(self):
        return None, None

    def getbbox(self, text):
        return 0, 0, 10, 10


def test_a_face_without_a_family_name_is_a_fallback_not_a_crash(monkeypatch):
    monkeypatch.setattr(ImageFont, "truetype", lambda path, size, index=0: _NamelessFont())
    assert language._simplified_face("/fonts/nameless.ttf") == 0
