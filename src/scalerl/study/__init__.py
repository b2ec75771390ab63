"""scalerl.study"""
