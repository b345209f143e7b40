"""What runs, installs or mounts when opened: the file name endings and declared types `executables.py` judges by.

Each ending stands under what it is, so a held-back attachment can say why. The lists take in every ending of
the attachment-blocking lists of major mail services, as they stand in 2026:

- Gmail, "File types blocked in Gmail" (support.google.com/mail/answer/6590): .ade .adp .apk .appx .appxbundle
  .bat .cab .chm .cmd .com .cpl .diagcab .diagcfg .diagpkg .dll .dmg .ex .ex_ .exe .hta .img .ins .iso .isp .jar
  .jnlp .js .jse .lib .lnk .mde .mjs .msc .msi .msix .msixbundle .msp .mst .nsh .pif .ps1 .scr .sct .shb .sys .vb
  .vbe .vbs .vhd .vxd .wsc .wsf .wsh .xll;
- Outlook's Level 1 list ("Blocked attachments in Outlook", support.microsoft.com, and Exchange Online's
  `BlockedFileTypes` of Outlook on the web): Access files (.accda .accde .ade .adp .mad … .maw .mda .mdb .mde .mdt
  .mdw .mdz), .app .appcontent-ms .application .appref-ms .asp .aspx .asx .bas .bat .bgi .cab .cdxml .cer .chm .cmd
  .cnt .com .cpl .crt .csh .der .diagcab .exe .fxp .gadget .grp .hlp .hpj .hta .htc .img .inf .ins .iso .isp .its
  .jar .jnlp .js .jse .ksh .lnk .mcf .mht .mhtml .msc .msh* .msi .msp .mst .msu .ops .osd .pcd .pif .pl .plg .prf
  .prg .printerexport .ps1 .ps1xml .ps2 .ps2xml .psc1 .psc2 .psd1 .psdm1 .pssc .pst .py .pyc .pyo .pyw .pyz .pyzw
  .reg .scf .scr .sct .settingcontent-ms .shb .shs .theme .tmp .udl .url .vb .vbe .vbp .vbs .vhd .vhdx .vsmacros
  .vsw .webpnp .website .ws .wsb .wsc .wsf .wsh .xbap .xll .xnk;
- Microsoft Defender for Office 365's default common attachments filter (adds .ace .ani .arj .deb .dex .elf
  .kext .lha .lzh .macho .ppa .ppam .rev .uif .xz .z among others: the archive formats there stand for what they
  may hold, and are not held back here; see `executables.py` for what is read inside a ZIP);

and what the desktops run or mount on a double click that those lists leave out: OneNote notebooks, SYLK and Excel
query files (.one .onepkg .slk .iqy .dqy .oqy .rqy), App Installer and Windows search and library files, macOS
disk images, installers, AppleScript, Automator, Terminal and location files, Linux launchers and packages.
"""

from __future__ import annotations

#: what each ending is (the words a held-back attachment's reason uses), and the endings
_KINDS: dict[str, str] = {
    "a Windows program, library or driver": (
        "exe com scr pif cpl dll sys ocx drv vxd lib ex ex_ xll efi"
    ),
    "a Windows installer, package or update": (
        "msi msp mst msu msix msixbundle appx appxbundle appinstaller application appref-ms xbap cab diagcab "
        "diagcfg diagpkg ppkg nsh inf ins isp gadget printerexport webpnp"
    ),
    "a Windows shortcut or location file, which opens what it points to": (
        "lnk url website scf xnk shb shs library-ms searchconnector-ms settingcontent-ms appcontent-ms glk"
    ),
    "a Windows script": (
        "bat cmd vb vbs vbe vbp js jse mjs wsf wsh wsc sct ws ps1 ps1xml ps2 ps2xml psc1 psc2 psm1 psd1 psdm1 pssc "
        "cdxml msh msh1 msh2 mshxml msh1xml msh2xml bas a3x au3 ahk"
    ),
    "a Windows settings, help or certificate file that changes the system or runs code when opened": (
        "reg theme themepack desktopthemepackfile msc prf ops udl wsb cer crt der grp hlp hpj cnt chm its mcf "
        "osd pcd plg prg fxp bgi vsmacros vsw asx asp aspx pst tmp"
    ),
    "a web application, component or page archive, which runs script": "hta htc mht mhtml",
    "a Microsoft Access database or project, which runs its macros and code": (
        "mdb mde mda mdt mdw mdz accda accdb accdc accde accdr accdt ade adp "
        "mad maf mag mam maq mar mas mat mau mav maw"
    ),
    "an Office file with macros, an add-in, or a file Office runs formulas or queries of": (
        "docm dotm xlsm xltm xlam xla xlsb pptm potm ppsm ppam ppa sldm one onepkg slk iqy dqy oqy rqy"
    ),
    "a disk image, mounted as a drive when opened": "iso img vhd vhdx dmg sparseimage",
    "a macOS application, installer, script or location file": (
        "app pkg mpkg command tool scpt scptd applescript workflow action terminal prefpane kext saver osax "
        "webloc inetloc fileloc mobileconfig"
    ),
    "a Linux or Unix program, script, package or launcher": (
        "sh bash csh ksh zsh fish run elf appimage desktop deb rpm snap flatpak flatpakref flatpakrepo"
    ),
    "a program for an interpreter or a runtime": (
        "jar class jnlp py pyw pyc pyo pyz pyzw pl plx rb apk dex ipa xap"
    ),
}  # fmt: skip

#: what a name ending is, for each ending that runs, installs or mounts when opened
EXTENSION_KINDS: dict[str, str] = {ending: kind for kind, endings in _KINDS.items() for ending in endings.split()}
EXECUTABLE_EXTENSIONS = frozenset(EXTENSION_KINDS)
#: endings that are ordinary words too (`Q3.action.items.pdf`, `team.desktop.photo.png`): they count only as the
#: last ending of a name, where the system reads them; every other ending counts anywhere in a name
LAST_ONLY = frozenset(
    {"action", "tool", "command", "run", "desktop", "one", "theme", "website", "application", "terminal", "saver",
     "its", "ops", "tmp", "snap", "fish", "app", "glk", "grp", "bas", "plg", "ws", "vb", "ex"}
)  # fmt: skip

#: declared types of programs, scripts, installers, disk images, shortcuts and Access files (Outlook on the web's
#: `BlockedMimeTypes` among them); any type with "macroenabled" in it is a macro-enabled Office file
EXECUTABLE_TYPES = frozenset(
    {
        "application/x-msdownload", "application/x-msdos-program", "application/x-ms-dos-executable",
        "application/x-dosexec", "application/x-exe", "application/exe", "application/x-winexe",
        "application/vnd.microsoft.portable-executable", "application/x-executable", "application/x-pie-executable",
        "application/x-elf", "application/x-sharedlib", "application/x-mach-binary", "application/x-mach-o-executable",
        "application/x-msi", "application/x-ms-installer", "application/vnd.ms-cab-compressed",
        "application/vnd.ms-appx", "application/msix", "application/appinstaller", "application/x-ms-application",
        "application/x-silverlight-app", "application/x-ms-shortcut", "application/internet-shortcut",
        "application/x-mswinurl", "application/x-url", "application/x-internet-signup", "application/prg",
        "application/x-sh", "application/x-shellscript", "application/x-csh", "text/x-shellscript", "text/x-sh",
        "application/x-bat", "application/bat", "application/x-msbatch", "text/x-msdos-batch",
        "application/javascript", "application/x-javascript", "text/javascript", "application/ecmascript",
        "text/ecmascript", "text/jscript", "application/x-vbscript", "text/vbscript", "text/x-vbscript",
        "text/scriptlet", "text/x-scriptlet", "application/x-powershell", "text/x-powershell", "application/hta",
        "application/java-archive", "application/x-java-archive", "application/x-java-applet",
        "application/x-java-jnlp-file", "application/vnd.android.package-archive",
        "application/x-python", "application/x-python-code", "text/x-python", "application/x-perl", "text/x-perl",
        "application/x-ruby",
        "application/x-apple-diskimage", "application/x-iso9660-image", "application/x-cd-image",
        "application/x-raw-disk-image", "application/x-vhd", "application/x-virtualbox-vhd",
        "application/x-virtualbox-vhdx", "application/vnd.apple.installer+xml", "application/x-apple-aspen-config",
        "application/x-desktop", "application/vnd.debian.binary-package", "application/x-deb", "application/x-rpm",
        "application/x-redhat-package-manager", "application/vnd.appimage", "application/x-appimage",
        "application/msaccess", "application/x-msaccess", "application/vnd.ms-access", "application/onenote",
        "application/msonenote", "application/x-sylk", "text/x-ms-iqy",
    }
)  # fmt: skip
